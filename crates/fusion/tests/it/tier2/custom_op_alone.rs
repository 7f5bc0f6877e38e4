//! A custom op (one of burnacc's kernels) that leads a block of `Fusion<CubeAcc<R>>` runs
//! alone, so that the element-wise ops behind it fuse into one of Burn's kernels instead of
//! running op by op. On lavapipe, against the same ops on `NdArray<f64>` (whose QuickGELU is
//! the plain-Burn reference); the counters prove which path ran.

use crate::readings::growth;
use crate::relative::assert_within;
use crate::synced::uniform;
use burn::backend::wgpu::WgpuRuntime;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;
use burnacc_fusion::counters::{CUBE_CUSTOM_OP_ALONE, CUBE_STOCK_ELEMENTWISE};
use burnacc_fusion::{CubeAcc, Fusion};
use burnacc_kernels::gelu::{GeluKernel, quick_gelu};
use burnacc_tests::tolerance::{FUSED_F32_FORWARD, FUSED_F32_GRADIENT};

type Acc = Fusion<CubeAcc<WgpuRuntime>>;
type Ref = NdArray<f64>;

/// Counter readings: custom ops run alone, Burn's element-wise kernels run.
fn counts() -> [u64; 2] {
    [CUBE_CUSTOM_OP_ALONE.get(), CUBE_STOCK_ELEMENTWISE.get()]
}

/// Two independent chains, interleaved as a model's ops often are:
/// `exp(0.5 · quick_gelu(x) + r)`, three element-wise ops behind a custom op, and `2a + 1`
/// beside it, which keeps Burn's stream exploring while the first is recorded. The ops that
/// read the custom op's output join its block; unless the custom op is taken alone, no fuser
/// is ready for that block and it runs op by op.
fn gelu_beside_elementwise<B: GeluKernel>() -> [Tensor<B, 2>; 2] {
    let x = uniform::<B, 2>(1, [5, 37]);
    let r = uniform::<B, 2>(2, [5, 37]);
    let a = uniform::<B, 2>(3, [3, 11]);
    let a = a.mul_scalar(2.0);
    let g = quick_gelu(x);
    let a = a.add_scalar(1.0);
    let y = (g.mul_scalar(0.5) + r).exp();
    [y, a]
}

#[test]
fn the_ops_behind_a_custom_op_fuse_into_one_kernel() {
    let before = counts();
    let [y, a] = gelu_beside_elementwise::<Acc>();
    let [y_ref, a_ref] = gelu_beside_elementwise::<Ref>();
    assert_within("exp(0.5 quick_gelu(x) + r)", y, y_ref, FUSED_F32_FORWARD);
    assert_within("2a + 1", a, a_ref, FUSED_F32_FORWARD);
    // The kernel alone; one of Burn's kernels for `2a + 1`, and one for the scaling, the sum
    // and the `exp` behind the custom op (op by op, they would be three launches: `[0, 1]`).
    assert_eq!(
        growth(counts, before),
        [1, 2],
        "[custom ops alone, element-wise kernels]"
    );
}

/// `Σ w · quick_gelu(3x)`; returns the gradient of `x`. The backward runs QuickGELU's backward
/// kernel, then the `· 3` of the scaling's backward behind it.
fn gelu_gradient<B: AutodiffBackend + GeluKernel>() -> Tensor<B::InnerBackend, 2>
where
    B::InnerBackend: GeluKernel,
{
    let x = uniform::<B, 2>(3, [6, 19]).require_grad();
    let w = uniform::<B, 2>(4, [6, 19]);
    let grads = (quick_gelu(x.clone().mul_scalar(3.0)) * w).sum().backward();
    x.grad(&grads).expect("dx")
}

#[test]
fn a_custom_op_of_the_backward_runs_alone_and_equals_the_reference() {
    let before = counts();
    let got = gelu_gradient::<Autodiff<Acc>>();
    assert_within(
        "dx",
        got,
        gelu_gradient::<Autodiff<Ref>>(),
        FUSED_F32_GRADIENT,
    );
    let [alone, kernels] = growth(counts, before);
    // QuickGELU's backward leads its block (the forward follows the `3x` in its block).
    assert_eq!(alone, 1, "custom ops alone");
    assert!(kernels >= 1, "element-wise kernels: {kernels}");
}
