//! Unscaling the gradients of a module and checking them for inf/NaN, on the device.
//!
//! PyTorch: `GradScaler._unscale_grads_` → `torch._amp_foreach_non_finite_check_and_unscale_`
//! (`aten/src/ATen/native/cuda/AmpKernels.cu`): each gradient element is checked *before* it is
//! multiplied by `inv_scale`, and `found_inf` becomes 1 if any element is inf or NaN.

use burn::module::{AutodiffModule, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Bool, DType, Tensor};
use std::collections::HashSet;

/// Visits the float parameters of a module and unscales their gradients in `grads`.
pub(super) struct Unscaler<'a, B: AutodiffBackend> {
    grads: &'a mut GradientsParams,
    /// `1 / scale`: f32 `[1]`.
    inv_scale: Tensor<B::InnerBackend, 1>,
    /// OR over the gradients seen so far of "has a non-finite element": bool `[1]`.
    found: Option<Tensor<B::InnerBackend, 1, Bool>>,
    /// A parameter shared by several submodules is visited once per use; its gradient must
    /// be unscaled once.
    seen: HashSet<ParamId>,
}

impl<'a, B: AutodiffBackend> Unscaler<'a, B> {
    pub(super) fn new(
        grads: &'a mut GradientsParams,
        inv_scale: Tensor<B::InnerBackend, 1>,
    ) -> Self {
        Self {
            grads,
            inv_scale,
            found: None,
            seen: HashSet::new(),
        }
    }

    /// Unscales every gradient of `module`'s float parameters and returns `found_inf`:
    /// f32 `[1]`, 1.0 if any of them had an inf or NaN element, else 0.0.
    pub(super) fn run<M: AutodiffModule<B>>(mut self, module: &M) -> Tensor<B::InnerBackend, 1> {
        module.visit(&mut self);
        let zeros = Tensor::zeros([1], (&self.inv_scale.device(), DType::F32));
        match self.found {
            Some(found) => zeros.mask_fill(found, 1.0),
            None => zeros,
        }
    }
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Unscaler<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if !self.seen.insert(param.id) {
            return;
        }
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) else {
            return;
        };
        let non_finite = grad.clone().is_finite().bool_not().any();
        self.found = Some(match self.found.take() {
            Some(found) => found.bool_or(non_finite),
            None => non_finite,
        });
        let unscaled = unscale(grad, self.inv_scale.clone(), param.val().dtype());
        self.grads.register(param.id, unscaled);
    }
}

/// `grad * inv_scale`, computed in f32 (f64 when the gradient or its parameter is f64) and
/// returned in the parameter's dtype.
///
/// Gradients normally arrive in their parameter's dtype (f32 master weights) and nothing is
/// cast. A half-precision gradient is widened before the multiply: `inv_scale = 2^-16` is
/// subnormal in f16, and PyTorch's kernel also computes in f32 (its `opmath_t`).
fn unscale<B: burn::tensor::backend::Backend, const D: usize>(
    grad: Tensor<B, D>,
    inv_scale: Tensor<B, 1>,
    param_dtype: DType,
) -> Tensor<B, D> {
    let compute = if grad.dtype() == DType::F64 || param_dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let inv_scale = inv_scale.cast(compute).reshape([1; D]);
    (grad.cast(compute) * inv_scale).cast(param_dtype)
}
