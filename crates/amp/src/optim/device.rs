//! Device-side helpers shared by the sync-free optimizers: the skip mask, the step counter,
//! bias corrections, and dimension-erased state tensors.

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, DType, Tensor, TensorPrimitive};

/// This step's found-inf flag, prepared once per optimizer step.
pub(crate) struct StepMask<B: Backend> {
    /// `found_inf > 0`: bool `[1]`; `None` when no flag was given.
    skip: Option<Tensor<B, 1, Bool>>,
    /// `1 - found_inf`: f32 `[1]`; `None` when no flag was given (advance by exactly 1).
    advance: Option<Tensor<B, 1>>,
}

impl<B: Backend> StepMask<B> {
    /// found_inf: f32 `[1]`, 0.0 or 1.0, as recorded by `GradScaler::unscale`.
    pub(crate) fn new(found_inf: Option<&Tensor<B, 1>>) -> Self {
        match found_inf {
            None => Self {
                skip: None,
                advance: None,
            },
            Some(found) => {
                let found = found.clone().cast(DType::F32);
                Self {
                    skip: Some(found.clone().greater_elem(0.0)),
                    advance: Some(found.neg().add_scalar(1.0)),
                }
            }
        }
    }

    /// `old` where the step is skipped, else `new`: a select (`mask_where`), never
    /// `new * (1 - f) + old * f`, which turns the skipped step's inf into NaN (`0 * inf`).
    /// The `[1]` mask is expanded to the tensor's shape explicitly, so no backend has to
    /// broadcast inside `mask_where`.
    pub(crate) fn keep<const D: usize>(
        &self,
        new: Tensor<B, D>,
        old: Tensor<B, D>,
    ) -> Tensor<B, D> {
        match &self.skip {
            None => new,
            Some(skip) => {
                let mask = skip.clone().reshape([1; D]).expand(new.shape());
                new.mask_where(mask, old)
            }
        }
    }

    /// The step counter after this step: `step + 1 - found_inf` (f32 `[1]`). Exact: the
    /// counter is a small integer and `found_inf` is 0 or 1.
    pub(crate) fn advance(&self, step: Tensor<B, 1>) -> Tensor<B, 1> {
        match &self.advance {
            None => step.add_scalar(1.0),
            Some(advance) => step + advance.clone(),
        }
    }
}

/// A new step counter: f32 `[1]` zero, as PyTorch's `state["step"] = torch.tensor(0.0)`.
pub(crate) fn zero_step<B: Backend>(device: &B::Device) -> Tensor<B, 1> {
    Tensor::zeros([1], (device, DType::F32))
}

/// `1 - beta^step` for an f32 `[1]` step counter, on the device → f32 `[1]`; equal to
/// PyTorch's `1 - beta ** step` (`torch/optim/adam.py`) computed in f64 on the host, to about
/// 1e-7 relative on every backend.
///
/// With `x = step * (-ln beta) >= 0` this is `1 - e^-x`. Computed directly, it loses
/// `e^-x / (1 - e^-x)` times the error of `exp`: about three digits in f32 for `beta = 0.999`
/// at the first steps. Burn 0.21 has no `expm1`, and an `expm1` made of `tanh` is only as good
/// as the device's `tanh`, which some devices compute from `exp` (Mesa's lavapipe, under
/// wgpu, loses the same digits). So, with only multiplies, adds and `exp`:
/// - `x < 0.5`: the Taylor series `x (1 - x/2 (1 - x/3 (1 - ... (1 - x/9))))`, whose first
///   omitted term is below `0.5^9 / 10! = 5e-10` relative;
/// - `x >= 0.5`: `1 - e^-x`, where `e^-x <= 0.61` cancels at most 1.6 times `exp`'s error.
///
/// `beta = 0` gives 1, as `0^step` for `step >= 1`.
pub(crate) fn bias_correction<B: Backend>(step: Tensor<B, 1>, beta: f64) -> Tensor<B, 1> {
    /// Below this `x` the series is used.
    const SERIES_MAX: f64 = 0.5;
    /// Terms of the series: `x^n / n!` for `n = 1..=SERIES_TERMS`.
    const SERIES_TERMS: u32 = 9;
    if beta == 0.0 {
        return step.ones_like();
    }
    let x = step.mul_scalar(-beta.ln());
    // Clamped so that the branch not taken stays finite.
    let xs = x.clone().clamp_max(SERIES_MAX);
    let mut series = xs.ones_like();
    for n in (2..=SERIES_TERMS).rev() {
        series = (xs.clone() * series)
            .mul_scalar(-1.0 / f64::from(n))
            .add_scalar(1.0);
    }
    let series = xs * series;
    let direct = x.clone().neg().exp().neg().add_scalar(1.0);
    direct.mask_where(x.lower_elem(SERIES_MAX), series)
}

/// A float tensor of any rank, as stored in per-parameter state (each parameter has one
/// fixed rank, so the rank is restored by the code that stored it).
#[derive(Clone, Debug)]
pub(crate) struct Erased<B: Backend>(TensorPrimitive<B>);

impl<B: Backend> Erased<B> {
    pub(crate) fn new<const D: usize>(tensor: Tensor<B, D>) -> Self {
        Self(tensor.into_primitive())
    }

    /// A rank-erased primitive, as the multi-tensor steps return them.
    pub(crate) fn from_float(tensor: burn::tensor::ops::FloatTensor<B>) -> Self {
        Self(TensorPrimitive::Float(tensor))
    }

    /// The tensor as a rank-erased primitive.
    pub(crate) fn float(&self) -> burn::tensor::ops::FloatTensor<B> {
        self.0.clone().tensor()
    }

    /// The tensor, with its rank `D` (checked against its shape).
    pub(crate) fn get<const D: usize>(&self) -> Tensor<B, D> {
        let tensor = Tensor::<B, D>::from_primitive(self.0.clone());
        assert_eq!(
            tensor.shape().num_dims(),
            D,
            "optimizer state read with the wrong rank"
        );
        tensor
    }
}

#[cfg(test)]
mod tests {
    use super::bias_correction;
    use burn::backend::{Flex, NdArray, Wgpu};
    use burn::tensor::backend::Backend;
    use burn::tensor::{Tensor, TensorData};

    const STEPS: usize = 10_000;

    /// The largest relative error of `bias_correction` over steps `1..=STEPS` against
    /// `1 - beta^step` in f64.
    fn max_rel_error<B: Backend>(beta: f64) -> (f64, usize) {
        let device = B::Device::default();
        let steps: Vec<f32> = (1..=STEPS).map(|s| s as f32).collect();
        let steps = Tensor::<B, 1>::from_data(TensorData::new(steps, [STEPS]), &device);
        let actual = bias_correction(steps, beta)
            .to_data()
            .to_vec::<f32>()
            .unwrap();
        let mut worst = (0.0, 0);
        for (i, &a) in actual.iter().enumerate() {
            let step = i as i32 + 1;
            let expected = 1.0 - beta.powi(step);
            let err = (f64::from(a) - expected).abs() / expected;
            if err > worst.0 {
                worst = (err, step as usize);
            }
        }
        worst
    }

    fn check<B: Backend>(backend: &str) {
        for beta in [0.9, 0.99, 0.999, 0.9999] {
            let (err, step) = max_rel_error::<B>(beta);
            assert!(
                err < 1e-6,
                "{backend}: 1 - {beta}^step off by {err:e} (relative) at step {step}"
            );
        }
        let (err, _) = max_rel_error::<B>(0.0);
        assert_eq!(err, 0.0, "{backend}: beta = 0 gives exactly 1");
    }

    #[test]
    fn bias_correction_matches_f64_ndarray() {
        check::<NdArray>("NdArray");
    }

    #[test]
    fn bias_correction_matches_f64_flex() {
        check::<Flex>("Flex");
    }

    /// wgpu on Mesa's lavapipe (the project's test device), whose `exp` and `tanh` are less
    /// accurate than the CPU's: its `tanh` is made of `exp` and cancels for small arguments.
    #[test]
    fn bias_correction_matches_f64_wgpu() {
        check::<Wgpu>("wgpu");
    }
}
