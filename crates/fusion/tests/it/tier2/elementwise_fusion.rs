//! The element-wise fuser of `Fusion<CpuFlex>` against the same ops unfused on `CpuFlex`, bit
//! for bit (every fused op is the same f32 operation on the same values): batch norm's chain
//! with ReLU, non-contiguous and broadcast inputs, odd sizes, values kept alive past the chain,
//! random chains, and gradients through autodiff. The counters prove the fused pass ran.

use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData, activation};
use burnacc_fusion::counters::{ELEMENTWISE_FUSED, ELEMENTWISE_FUSED_OPS};
use burnacc_fusion::{CpuFlex, CpuFused};
use burnacc_tests::rng::HostRng;

fn tensor<B: Backend, const D: usize>(shape: [usize; D], seed: u64) -> Tensor<B, D> {
    let mut rng = HostRng::new(seed);
    let n = shape.iter().product();
    let values = rng.uniform_vec(n, -2.0, 2.0);
    Tensor::from_data(TensorData::new(values, shape.to_vec()), &Default::default())
}

fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().to_vec().unwrap()
}

/// Runs `graph` on both backends from the same seeded inputs; returns the fused passes and
/// fused ops it took, after asserting every output equal bit for bit.
fn compare<const N: usize>(
    name: &str,
    graph_fused: impl Fn() -> [Tensor<CpuFused, 4>; N],
    graph_flex: impl Fn() -> [Tensor<CpuFlex, 4>; N],
) -> (u64, u64) {
    let (passes, ops) = (ELEMENTWISE_FUSED.get(), ELEMENTWISE_FUSED_OPS.get());
    let fused = graph_fused();
    let fused: Vec<Vec<f32>> = fused.into_iter().map(values).collect();
    let passes = ELEMENTWISE_FUSED.get() - passes;
    let ops = ELEMENTWISE_FUSED_OPS.get() - ops;
    let expected: Vec<Vec<f32>> = graph_flex().into_iter().map(values).collect();
    for (i, (got, want)) in fused.iter().zip(&expected).enumerate() {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(got),
            bits(want),
            "{name}: output {i} differs from the unfused ops"
        );
    }
    (passes, ops)
}

/// `(x − mean) / std · γ + β`, then ReLU: batch norm's normalisation as `models::BatchNorm`
/// writes it, on odd sizes.
fn batch_norm_relu<B: Backend>() -> [Tensor<B, 4>; 1] {
    let x = tensor::<B, 4>([3, 5, 7, 9], 1);
    let mean = tensor::<B, 4>([1, 5, 1, 1], 2);
    let var = tensor::<B, 4>([1, 5, 1, 1], 3).abs();
    let gamma = tensor::<B, 4>([1, 5, 1, 1], 4);
    let beta = tensor::<B, 4>([1, 5, 1, 1], 5);
    let std = var.add_scalar(1e-5).sqrt();
    [activation::relu(x.sub(mean).div(std).mul(gamma).add(beta))]
}

#[test]
fn batch_norm_and_relu_run_as_one_pass() {
    let (passes, ops) = compare(
        "batch norm + relu",
        batch_norm_relu::<CpuFused>,
        batch_norm_relu::<CpuFlex>,
    );
    // `|var| + ε`, `sqrt` on [1, C, 1, 1] is one pass; `÷ std`, `· γ`, `+ β` and ReLU's
    // comparison and mask over [N, C, H, W] another. Burn's stream runs `x − mean` on its own:
    // it opens a new block of ops (it shares no tensor with the statistics' block) that is
    // executed before the two blocks meet at the division.
    assert_eq!(passes, 2, "fused passes");
    assert_eq!(ops, 8, "fused ops");
}

/// Strided (transposed, permuted) inputs, a scalar-first chain, every unary op, comparisons
/// between tensors and `mask_where`.
fn strided_and_unary<B: Backend>() -> [Tensor<B, 4>; 1] {
    let a = tensor::<B, 4>([2, 11, 3, 13], 6).swap_dims(1, 3); // [2, 13, 3, 11], strided
    let b = tensor::<B, 4>([13, 3, 11, 2], 7).permute([3, 0, 1, 2]); // [2, 13, 3, 11]
    let c = tensor::<B, 4>([1, 13, 1, 11], 8);
    let y = a
        .clone()
        .mul_scalar(0.5)
        .exp()
        .add(b.clone().abs().add_scalar(1.0).log());
    let y = y
        .sub(c.clone())
        .tanh()
        .mul(b.clone().abs().add_scalar(0.25).sqrt().recip());
    let y = y.powi_scalar(2).add(a.clone().powi_scalar(3));
    let mask = a.clone().greater(b.clone());
    [y.mask_where(mask, c.div_scalar(3.0).expand([2, 13, 3, 11]))]
}

#[test]
fn strided_inputs_unary_ops_and_masks() {
    let (passes, ops) = compare(
        "strided + unary",
        strided_and_unary::<CpuFused>,
        strided_and_unary::<CpuFlex>,
    );
    assert!(passes >= 1, "no fused pass ran");
    assert!(ops >= 15, "only {ops} ops were fused");
}

/// A value of the chain that is still used afterwards is written out as well as the result.
fn kept_alive<B: Backend>() -> [Tensor<B, 4>; 2] {
    let x = tensor::<B, 4>([4, 3, 17, 5], 9);
    let kept = x.clone().mul_scalar(2.0).add_scalar(1.0);
    let out = kept.clone().mul(x).sub_scalar(0.5);
    [out, kept]
}

#[test]
fn values_used_after_the_chain_are_written() {
    let (passes, ops) = compare("kept alive", kept_alive::<CpuFused>, kept_alive::<CpuFlex>);
    assert_eq!(passes, 1, "fused passes");
    assert_eq!(ops, 4, "fused ops");
}

/// A pass large enough to be split into parallel tasks (several tiles per task, a partial
/// last task).
fn large<B: Backend>() -> [Tensor<B, 4>; 1] {
    let x = tensor::<B, 4>([3, 64, 33, 35], 10);
    let s = tensor::<B, 4>([1, 64, 1, 1], 11);
    [activation::relu(x.mul(s.clone()).add(s))]
}

#[test]
fn large_passes_split_over_threads() {
    let (passes, _) = compare("large", large::<CpuFused>, large::<CpuFlex>);
    assert_eq!(passes, 1, "fused passes");
}

/// Random chains of fusable ops on a pool of broadcast and full tensors.
fn random_chain<B: Backend>(seed: u64) -> [Tensor<B, 4>; 2] {
    let mut rng = HostRng::new(seed);
    let shape = [2, 3 + rng.below(5) as usize, 1 + rng.below(9) as usize, 5];
    let pick = |rng: &mut HostRng, i: u64| {
        let mut s = shape;
        for size in &mut s {
            if rng.below(3) == 0 {
                *size = 1;
            }
        }
        tensor::<B, 4>(s, seed * 100 + i)
    };
    let mut y = tensor::<B, 4>(shape, seed * 100);
    let mut kept = y.clone();
    for i in 0..12 {
        y = match rng.below(8) {
            0 => y.add(pick(&mut rng, i)),
            1 => y.sub(pick(&mut rng, i)),
            2 => y.mul(pick(&mut rng, i)),
            3 => y.div(pick(&mut rng, i).abs().add_scalar(0.5)),
            4 => y.mul_scalar(rng.uniform(-2.0, 2.0)),
            5 => y.tanh(),
            6 => activation::relu(y),
            _ => {
                kept = y.clone();
                y.add_scalar(rng.uniform(-1.0, 1.0))
            }
        };
    }
    [y, kept]
}

#[test]
fn random_chains_match_the_unfused_ops() {
    let mut fused_ops = 0;
    for seed in 1..=20 {
        let (_, ops) = compare(
            &format!("random chain {seed}"),
            || random_chain::<CpuFused>(seed),
            || random_chain::<CpuFlex>(seed),
        );
        fused_ops += ops;
    }
    assert!(
        fused_ops >= 150,
        "only {fused_ops} of the random chains' ops were fused"
    );
}

/// Forward and backward of a loss through the batch-norm chain: the gradients of `x`, `γ` and
/// `β` (autodiff's backward is itself element-wise chains and reductions).
fn gradients<B: burn::tensor::backend::AutodiffBackend>() -> [Tensor<B::InnerBackend, 4>; 3] {
    let x = tensor::<B, 4>([2, 3, 5, 7], 12).require_grad();
    let gamma = tensor::<B, 4>([1, 3, 1, 1], 13).require_grad();
    let beta = tensor::<B, 4>([1, 3, 1, 1], 14).require_grad();
    let mean = x.clone().mean_dim(0).mean_dim(2).mean_dim(3);
    let y = activation::relu(x.clone().sub(mean).mul(gamma.clone()).add(beta.clone()));
    let loss = y.clone().mul(y).sum();
    let grads = loss.backward();
    [
        x.grad(&grads).unwrap(),
        gamma.grad(&grads).unwrap(),
        beta.grad(&grads).unwrap(),
    ]
}

#[test]
fn gradients_through_fused_chains_match() {
    let (passes, _) = compare(
        "gradients",
        gradients::<Autodiff<CpuFused>>,
        gradients::<Autodiff<CpuFlex>>,
    );
    assert!(
        passes >= 2,
        "forward and backward should each fuse, got {passes} passes"
    );
}
