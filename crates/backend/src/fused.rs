//! Fused ops a model can call on any backend: each runs a fused kernel where the trainer has
//! routed one for the model's backend ([`crate::routes`]; on an acc stack, `[kernels]` keys
//! of the recipe), else the same maths with plain Burn ops. Routed calls bump a kernel
//! counter ([`crate::counters`]).
//!
//! They are called outside `Acc`'s op dispatch, so autocast does not cast their inputs: the
//! bias (an f32 parameter) is cast to the activation's dtype here, as `nn::Linear` under
//! autocast would have added it in that dtype.
//!
//! Swin's ops (window processing, window-attention softmax) and the batch norm return `None`
//! when nothing is routed: their plain form is the model's own sequence of Burn ops, which
//! stays in the model.

use crate::counters;
use crate::routes::{
    BatchNorm, BiasDropoutAdd, BiasGelu, QuickGelu, WindowProcess, WindowProcessReverse,
    WindowSoftmax, is_routed, lookup,
};
use burn::backend::flex::FlexDevice;
use burn::tensor::activation::sigmoid;
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Distribution, Int, Tensor, TensorPrimitive};
use core::any::TypeId;

fn float<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> burn::tensor::ops::FloatTensor<B> {
    tensor.into_primitive().tensor()
}

fn tensor<B: Backend, const D: usize>(
    primitive: burn::tensor::ops::FloatTensor<B>,
) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(primitive))
}

/// `tensor` in `dtype`, without a cast op when it already is.
fn in_dtype<B: Backend, const D: usize>(tensor: Tensor<B, D>, dtype: DType) -> Tensor<B, D> {
    if tensor.dtype() == dtype {
        tensor
    } else {
        tensor.cast(dtype)
    }
}

/// `bias` in the dtype of `like`.
fn bias_like<B: Backend, const D: usize>(bias: Tensor<B, 1>, like: &Tensor<B, D>) -> Tensor<B, 1> {
    in_dtype(bias, like.dtype())
}

/// Exact (erf) GELU, `x·Φ(x)`, any shape → like `x`, with an exact gradient on every backend.
///
/// Burn 0.21's default `gelu_backward`, which the CubeCL backends (wgpu, CUDA) use,
/// differentiates the tanh approximation instead of the erf GELU that `gelu` computes: its
/// gradients are off by up to 1e-3 of their scale (measured on lavapipe against Flex and
/// PyTorch, `models/tests/it/tier2/gradient_parity.rs`). Flex's backward (and CpuFlex's fused
/// kernel) is exact, so on the CPU this is Burn's one `gelu` op; elsewhere it is spelled
/// `x·(1 + erf(x/√2))/2`, whose ops all have exact backwards (and which Burn's fusion compiles
/// into one element-wise kernel each way).
pub fn gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    if TypeId::of::<B::Device>() == TypeId::of::<FlexDevice>() {
        burn::tensor::activation::gelu(x)
    } else {
        let cdf = x
            .clone()
            .div_scalar(core::f64::consts::SQRT_2)
            .erf()
            .add_scalar(1.0);
        (x * cdf).div_scalar(2.0)
    }
}

/// Whether [`bias_gelu`] runs a fused kernel for `B` on this thread. A model can keep its
/// usual path (e.g. `nn::Linear` then `gelu`) when it does not.
pub fn bias_gelu_routed<B: Backend>() -> bool {
    is_routed::<BiasGelu, B>()
}

/// `gelu(x + bias)`, exact (erf) GELU: `x: [..., width]`, `bias: [width]` → like `x`.
pub fn bias_gelu<B: Backend, const D: usize>(x: Tensor<B, D>, bias: Tensor<B, 1>) -> Tensor<B, D> {
    let bias = bias_like(bias, &x);
    match lookup::<BiasGelu, B>() {
        Some(fused) => {
            counters::bump_kernel("fused_bias_gelu");
            tensor(fused(float(x), float(bias)))
        }
        None => gelu(x + bias.unsqueeze()),
    }
}

/// `x·sigmoid(1.702·x)` (QuickGELU), any shape → like `x`.
pub fn quick_gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    match lookup::<QuickGelu, B>() {
        Some(fused) => {
            counters::bump_kernel("fused_quick_gelu");
            tensor(fused(float(x)))
        }
        None => x.clone() * sigmoid(x.mul_scalar(1.702)),
    }
}

/// Whether [`bias_dropout_add`] runs a fused kernel for `B` on this thread.
pub fn bias_dropout_add_routed<B: Backend>() -> bool {
    is_routed::<BiasDropoutAdd, B>()
}

/// `residual + dropout(x + bias, p)`: `x`, `residual: [..., width]`, `bias: [width]` → like
/// `x`. As `nn::Dropout`, dropout applies only while autodiff is on (training), and kept
/// values are scaled by `1 / (1 − p)`. Routed: one fused op whose mask is regenerated in the
/// backward from a seed drawn on the device. Else Burn ops with `nn::Dropout`'s Bernoulli
/// mask (a different generator, so the two paths draw different masks).
pub fn bias_dropout_add<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: Tensor<B, 1>,
    residual: Tensor<B, D>,
    p: f64,
) -> Tensor<B, D> {
    let p = if B::ad_enabled(&x.device()) { p } else { 0.0 };
    let bias = bias_like(bias, &x);
    match lookup::<BiasDropoutAdd, B>() {
        Some(fused) => {
            counters::bump_kernel("fused_bias_dropout_add");
            let residual = residual.cast(x.dtype());
            tensor(fused(float(x), float(bias), float(residual), p))
        }
        None => {
            let y = x + bias.unsqueeze();
            let y = if p == 0.0 {
                y
            } else {
                let keep = y.random_like(Distribution::Bernoulli(1.0 - p));
                y * keep * (1.0 / (1.0 - p))
            };
            y + residual
        }
    }
}

/// A training-mode batch norm, then a ReLU when `relu`, as one fused op each way when routed
/// for `B` on this thread; `None` otherwise (the model then runs its own ops).
///
/// x: `[N, C, ...]` (rank ≥ 2); gamma, beta: `[C]` (cast to the dtype of `x` here, as autocast
/// would have applied them) → `(y, mean, var)`: `y` like `x`, `(x − mean) / sqrt(var +
/// epsilon) · gamma + beta`; the batch's per-channel `mean` and biased `var` (over every axis
/// but 1), `[C]` in the dtype of `x`, detached, for the caller's running statistics.
pub fn batch_norm<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    epsilon: f64,
    relu: bool,
) -> Option<(Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>)> {
    let fused = lookup::<BatchNorm, B>()?;
    counters::bump_kernel("fused_batch_norm");
    let dtype = x.dtype();
    let (gamma, beta) = (bias_like(gamma, &x), bias_like(beta, &x));
    let (y, mean, rstd) = fused(float(x), float(gamma), float(beta), epsilon, relu);
    // var = 1 / rstd² − epsilon: the kernels keep `rstd`, which is what their backward reads.
    let var = tensor::<B, 1>(rstd)
        .powi_scalar(2)
        .recip()
        .sub_scalar(epsilon);
    Some((
        tensor(y),
        in_dtype(tensor::<B, 1>(mean), dtype),
        in_dtype(var, dtype),
    ))
}

/// Swin's cyclic shift by `−shift`, zero pad to a multiple of `window` and window partition as
/// one fused op, when routed for `B` on this thread; `None` otherwise (the model then runs its
/// own ops on its copy of `x`).
///
/// x: `[batch, h, w, c]` → `[batch · ⌈h/wh⌉ · ⌈w/ww⌉, wh · ww, c]`, windows row-major per image,
/// images outermost (timm's `torch.roll` + `F.pad` + `window_partition`).
pub fn window_process<B: Backend>(
    x: Tensor<B, 4>,
    window: [usize; 2],
    shift: [usize; 2],
) -> Option<Tensor<B, 3>> {
    let fused = lookup::<WindowProcess, B>()?;
    counters::bump_kernel("fused_window_process");
    let [_, h, w, _] = x.dims();
    Some(tensor(fused(float(x), [h, w], window, shift)))
}

/// The inverse of [`window_process`] (merge, crop to `resolution`, shift by `+shift`) as one
/// fused op, when routed; `None` otherwise.
///
/// windows: `[batch · ⌈h/wh⌉ · ⌈w/ww⌉, wh · ww, c]` → `[batch, h, w, c]`.
pub fn window_process_reverse<B: Backend>(
    windows: Tensor<B, 3>,
    resolution: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
) -> Option<Tensor<B, 4>> {
    let fused = lookup::<WindowProcessReverse, B>()?;
    counters::bump_kernel("fused_window_process_reverse");
    Some(tensor(fused(float(windows), resolution, window, shift)))
}

/// Swin's window-attention softmax, `softmax(scores + table[index] + mask)` over the last
/// dimension with the relative position bias gathered from its table inside the op, when
/// routed; `None` otherwise.
///
/// scores: `[windows, heads, n, n]`; table: `[offsets, heads]` (cast to the scores' dtype
/// here, as autocast would have added it); index: `[n · n]`; mask: `[num_windows, n, n]`
/// (window `i` uses `mask[i mod num_windows]`) → like `scores`.
pub fn window_softmax<B: Backend>(
    scores: Tensor<B, 4>,
    table: Tensor<B, 2>,
    index: Tensor<B, 1, Int>,
    mask: Option<Tensor<B, 3>>,
) -> Option<Tensor<B, 4>> {
    let fused = lookup::<WindowSoftmax, B>()?;
    counters::bump_kernel("fused_swin_fmha");
    let dtype = scores.dtype();
    let mask = mask.map(|m| float(in_dtype(m, dtype)));
    Some(tensor(fused(
        float(scores),
        float(in_dtype(table, dtype)),
        index.into_primitive(),
        mask,
    )))
}
