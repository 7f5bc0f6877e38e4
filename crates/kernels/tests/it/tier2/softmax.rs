//! Softmax as one autodiff node (`burnacc_kernels::softmax`) against Burn's own softmax under
//! autodiff on `NdArray<f64>`: the value and the input gradient of `sum(softmax(x) ⊙ w)`, on
//! the reference backend itself and on wgpu (through Fusion, as `burn::backend::Wgpu`), over
//! the last dimension (the window-softmax backward kernel, whose launch counter proves it ran
//! on wgpu) and over a middle one (plain ops), with odd widths, rows of one element and a
//! strided (transposed) input.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::activation;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use burnacc_kernels::softmax::{SoftmaxKernel, softmax};
use burnacc_kernels::swin_attention::window_softmax_backward_launches;
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{ANALYTIC_BACKWARD_F64, FUSED_ELEMENTWISE_F32};

use crate::common::rel_err;

type Ref = Autodiff<NdArray<f64>>;
/// `burn::backend::Wgpu` is `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`.
type Wgpu = Autodiff<burn::backend::Wgpu>;

/// A softmax over `dim` of a tensor of `dims` (after the transposition of its last two
/// dimensions when `transposed`).
struct Case {
    dims: [usize; 4],
    dim: usize,
    transposed: bool,
}

const CASES: [Case; 4] = [
    // Attention scores `[batch, heads, tokens, tokens]` over the keys, an odd token count.
    Case {
        dims: [2, 3, 17, 17],
        dim: 3,
        transposed: false,
    },
    // Over a middle dimension: the node's backward in plain ops.
    Case {
        dims: [3, 5, 4, 7],
        dim: 1,
        transposed: false,
    },
    // A strided input: the last dimension of a transposed tensor.
    Case {
        dims: [2, 4, 9, 6],
        dim: 3,
        transposed: true,
    },
    // Rows of one element: every probability is 1 and every gradient 0.
    Case {
        dims: [2, 3, 5, 1],
        dim: 3,
        transposed: false,
    },
];

/// `(y, dx)` of `sum(softmax(x) ⊙ w)` on `B`, through the node (`fused`) or Burn's softmax.
fn value_and_gradient<B: AutodiffBackend + SoftmaxKernel>(
    case: &Case,
    fused: bool,
    device: &B::Device,
) -> (TensorData, TensorData) {
    let n = case.dims.iter().product();
    // Logits in [-4, 4]: rows with a clear maximum and others nearly flat.
    let x = Tensor::<B, 4>::from_data(
        TensorData::new(HostRng::new(1).uniform_vec(n, -4.0, 4.0), case.dims),
        device,
    )
    .require_grad();
    let input = if case.transposed {
        x.clone().swap_dims(2, 3)
    } else {
        x.clone()
    };
    let w = Tensor::<B, 4>::from_data(
        TensorData::new(HostRng::new(2).uniform_vec(n, -1.0, 1.0), input.dims()),
        device,
    );
    let y = if fused {
        softmax(input, case.dim)
    } else {
        activation::softmax(input, case.dim)
    };
    let grads = (y.clone() * w).sum().backward();
    let dx = x.grad(&grads).expect("x is tracked");
    (
        y.into_data().convert::<f64>(),
        dx.into_data().convert::<f64>(),
    )
}

#[test]
fn the_node_equals_burns_softmax_on_the_f64_reference() {
    let device = Default::default();
    for case in &CASES {
        let (y, dx) = value_and_gradient::<Ref>(case, true, &device);
        let (y_ref, dx_ref) = value_and_gradient::<Ref>(case, false, &device);
        let errs = [rel_err(y, y_ref), rel_err(dx, dx_ref)];
        println!("{:?} dim {}: {errs:?}", case.dims, case.dim);
        assert!(
            errs.iter().all(|&e| e <= ANALYTIC_BACKWARD_F64),
            "{:?} dim {}: (y, dx) errors {errs:?}",
            case.dims,
            case.dim
        );
    }
}

#[test]
fn on_wgpu_the_node_runs_the_backward_kernel_and_equals_the_reference() {
    let device = Default::default();
    let last_dim_cases = CASES.iter().filter(|c| c.dim == 3).count() as u64;
    let launches = window_softmax_backward_launches();
    for case in &CASES {
        let (y, dx) = value_and_gradient::<Wgpu>(case, true, &device);
        let (y_ref, dx_ref) = value_and_gradient::<Ref>(case, false, &Default::default());
        let errs = [rel_err(y, y_ref), rel_err(dx, dx_ref)];
        println!("{:?} dim {}: {errs:?}", case.dims, case.dim);
        assert!(
            errs.iter().all(|&e| e <= FUSED_ELEMENTWISE_F32),
            "{:?} dim {}: (y, dx) errors {errs:?}",
            case.dims,
            case.dim
        );
    }
    assert_eq!(
        window_softmax_backward_launches() - launches,
        last_dim_cases,
        "one backward kernel per softmax over the last dimension"
    );
}
