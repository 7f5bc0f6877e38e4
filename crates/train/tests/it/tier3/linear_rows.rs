//! On an acc stack, `linear` on inputs with leading dimensions runs as one product over every
//! position (the `linear` override of `burnacc_backend`): the same outputs and the same input,
//! weight and bias gradients as Burn's linear under autodiff on an `NdArray<f64>` reference, on
//! the shipped CPU and wgpu acc stacks, with the override's counter proving that each call took
//! it. BERT's and Swin's projections are such calls (`[batch, tokens, features]`).

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::module::linear;
use burn::tensor::{Tensor, TensorData};
use burnacc_backend::counters;
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{OpKind, Pass, Precision, assert_close, tolerance};
use burnacc_train::stack::{CpuAccBackend, WgpuAccBackend};

type Reference = Autodiff<NdArray<f64>>;

const IN: usize = 7;
const OUT: usize = 5;

/// The outputs and the gradients of `Σ y ⊙ w` (x, weight, bias) of two linears sharing one
/// weight and bias: on a `[2, 3, 4, IN]` input, and on a `[3, 6, IN]` view transposed from
/// `[6, 3, IN]` (strided: its rows are not contiguous). Each entry: a name, its shape, values.
fn linears<B: AutodiffBackend>(device: &B::Device) -> Vec<(&'static str, Vec<usize>, Vec<f64>)> {
    let tensor = |seed: u64, shape: &[usize]| {
        let n = shape.iter().product();
        TensorData::new(HostRng::new(seed).uniform_vec(n, -1.0, 1.0), shape.to_vec())
    };
    let x4 = Tensor::<B, 4>::from_data(tensor(1, &[2, 3, 4, IN]), device).require_grad();
    let x3 = Tensor::<B, 3>::from_data(tensor(2, &[6, 3, IN]), device).require_grad();
    let weight = Tensor::<B, 2>::from_data(tensor(3, &[IN, OUT]), device).require_grad();
    let bias = Tensor::<B, 1>::from_data(tensor(4, &[OUT]), device).require_grad();
    let y4 = linear(x4.clone(), weight.clone(), Some(bias.clone()));
    let y3 = linear(
        x3.clone().swap_dims(0, 1),
        weight.clone(),
        Some(bias.clone()),
    );
    let w4 = Tensor::<B, 4>::from_data(tensor(5, &[2, 3, 4, OUT]), device);
    let w3 = Tensor::<B, 3>::from_data(tensor(6, &[3, 6, OUT]), device);
    let loss = (y4.clone() * w4).sum() + (y3.clone() * w3).sum();
    let grads = loss.backward();
    let values = |data: TensorData| data.convert::<f64>().to_vec::<f64>().unwrap();
    vec![
        (
            "y of [2, 3, 4, in]",
            y4.dims().to_vec(),
            values(y4.into_data()),
        ),
        (
            "y of the strided [3, 6, in]",
            y3.dims().to_vec(),
            values(y3.into_data()),
        ),
        (
            "dx of [2, 3, 4, in]",
            vec![2, 3, 4, IN],
            values(x4.grad(&grads).unwrap().into_data()),
        ),
        (
            "dx of [6, 3, in]",
            vec![6, 3, IN],
            values(x3.grad(&grads).unwrap().into_data()),
        ),
        (
            "dweight",
            vec![IN, OUT],
            values(weight.grad(&grads).unwrap().into_data()),
        ),
        (
            "dbias",
            vec![OUT],
            values(bias.grad(&grads).unwrap().into_data()),
        ),
    ]
}

/// The acc stack `B` against the reference, and the override's counter: both linears take it.
fn rows_equal_reference<B: AutodiffBackend>(device: &B::Device) {
    let reference = linears::<Reference>(&Default::default());
    let calls = || counters::snapshot().kernel("linear_as_rows");
    let before = calls();
    let acc = linears::<B>(device);
    assert_eq!(
        calls() - before,
        2,
        "both linears run as one product over the rows"
    );
    for ((what, shape, got), (_, _, expected)) in acc.iter().zip(&reference) {
        let pass = if what.starts_with('y') {
            Pass::Forward
        } else {
            Pass::Backward
        };
        let tol = tolerance(OpKind::Contraction, Precision::F32, pass);
        assert_close(what, shape, got, expected, Precision::F32, tol);
    }
}

#[test]
fn linear_runs_on_rows_on_the_cpu_acc_stack() {
    rows_equal_reference::<CpuAccBackend>(&Default::default());
}

#[test]
fn linear_runs_on_rows_on_the_wgpu_acc_stack() {
    rows_equal_reference::<WgpuAccBackend>(&Default::default());
}
