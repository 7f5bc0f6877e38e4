//! burnacc's broadcasting element-wise kernel against Flex's own ops, element for element:
//! broadcast operands, permuted and narrowed views, odd sizes, every binary op.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::TensorData;
use burn::tensor::ops::FloatTensorOps;
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::BROADCAST_BINARY;
use burnacc_tests::rng::HostRng;

fn tensor(shape: &[usize], seed: u64) -> FlexTensor {
    let mut rng = HostRng::new(seed);
    let n = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| rng.uniform(0.5, 2.0)).collect();
    Flex::float_from_data(TensorData::new(values, shape.to_vec()), &Default::default())
}

fn values(t: FlexTensor) -> Vec<f32> {
    t.into_data().to_vec().unwrap()
}

type Op = fn(FlexTensor, FlexTensor) -> FlexTensor;

/// `CpuFlex`'s op against Flex's on the same operands, bit for bit (each element is one f32
/// operation either way), and the counter says burnacc's kernel ran.
fn check(name: &str, a: FlexTensor, b: FlexTensor) {
    let ops: [(&str, Op, Op); 4] = [
        ("add", CpuFlex::float_add, Flex::float_add),
        ("sub", CpuFlex::float_sub, Flex::float_sub),
        ("mul", CpuFlex::float_mul, Flex::float_mul),
        ("div", CpuFlex::float_div, Flex::float_div),
    ];
    for (op, ours, flex) in ops {
        let before = BROADCAST_BINARY.get();
        let got = ours(a.clone(), b.clone());
        assert_eq!(
            BROADCAST_BINARY.get() - before,
            1,
            "{name} {op}: the kernel did not run"
        );
        assert_eq!(
            got.layout().shape(),
            flex(a.clone(), b.clone()).layout().shape()
        );
        let expected = values(flex(a.clone(), b.clone()));
        assert_eq!(values(got), expected, "{name} {op}");
    }
}

#[test]
fn broadcast_channels_like_batch_norm() {
    // x: [N, C, H, W] with odd sizes against per-channel [1, C, 1, 1], both ways round.
    let x = tensor(&[3, 7, 5, 9], 1);
    let m = tensor(&[1, 7, 1, 1], 2);
    check("x op mean", x.clone(), m.clone());
    check("mean op x", m, x);
}

#[test]
fn broadcast_rows_and_columns() {
    check(
        "[33, 1] op [1, 127]",
        tensor(&[33, 1], 3),
        tensor(&[1, 127], 4),
    );
    check(
        "[4097, 7] op [1, 7]",
        tensor(&[4097, 7], 5),
        tensor(&[1, 7], 6),
    );
}

#[test]
fn strided_views_of_one_shape() {
    // A transposed and a permuted operand of the same logical shape as a contiguous one.
    let a = tensor(&[13, 17], 9).transpose(0, 1);
    let b = tensor(&[17, 13], 10);
    check("transposed op contiguous", a, b);
    let p = tensor(&[2, 5, 7, 3], 11).permute(&[0, 3, 1, 2]);
    let q = tensor(&[2, 3, 5, 7], 12);
    check("permuted op contiguous", q, p);
    // A narrowed view (offset, shorter rows) broadcast against a column.
    let n = tensor(&[6, 40], 13).narrow(1, 3, 31);
    check("narrowed op column", n, tensor(&[6, 1], 14));
}

#[test]
fn swapped_dims_like_batch_norm_statistics() {
    // `x.swap_dims(0, 1)` against a per-row statistic, as Burn's BatchNorm spells it.
    let x = tensor(&[4, 6, 3, 3], 15).transpose(0, 1);
    let stat = tensor(&[6, 1, 1, 1], 16);
    check("swapped op statistic", x, stat);
}
