//! burnacc's CPU kernels on tensors with no rows: empty results of the right shapes, and the
//! parameter gradients of an empty batch (zeros), as Flex's reference gives them.

use super::kernel_support::{assert_identical, normal};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{FloatDType, TensorData};
use burnacc_fusion::CpuFlex;
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, DropoutSeed};
use burnacc_kernels::gelu::GeluKernel;
use burnacc_kernels::layer_norm::LayerNormKernel;

fn empty(width: usize) -> burn::backend::flex::FlexTensor {
    Flex::float_from_data(
        TensorData::new(Vec::<f32>::new(), [0, width]),
        &Default::default(),
    )
}

#[test]
fn no_rows_give_empty_outputs_and_zero_parameter_gradients() {
    let (gamma, beta) = (normal(&[7], 1, 1.0), normal(&[7], 2, 1.0));
    let (y, mean, rstd) =
        CpuFlex::fused_layer_norm_with_stats(empty(7), gamma.clone(), beta.clone(), 1e-5);
    let (ey, emean, erstd) =
        Flex::fused_layer_norm_with_stats(empty(7), gamma.clone(), beta.clone(), 1e-5);
    assert_identical("layer_norm y", y, ey);
    assert_identical("layer_norm mean", mean.clone(), emean);
    assert_identical("layer_norm rstd", rstd.clone(), erstd);
    let (dx, dgamma, dbeta) =
        CpuFlex::fused_layer_norm_backward(empty(7), gamma.clone(), empty(7), mean, rstd);
    assert_identical("layer_norm dx", dx, empty(7));
    let zeros = Flex::float_zeros([7].into(), &Default::default(), FloatDType::F32);
    assert_identical("layer_norm dgamma", dgamma, zeros.clone());
    assert_identical("layer_norm dbeta", dbeta, zeros.clone());

    let bias = normal(&[7], 3, 1.0);
    assert_identical(
        "bias_gelu",
        CpuFlex::fused_bias_gelu(empty(7), Some(bias.clone())),
        empty(7),
    );
    let (dx, dbias) = CpuFlex::fused_bias_gelu_backward(empty(7), Some(bias.clone()), empty(7));
    assert_identical("bias_gelu dx", dx, empty(7));
    assert_identical("bias_gelu dbias", dbias.unwrap(), zeros.clone());

    let seed = DropoutSeed::from_u64(5)
        .to_tensor::<Flex>(&Default::default())
        .into_primitive();
    let y =
        CpuFlex::fused_bias_dropout_add(empty(7), Some(bias), empty(7), 0.1, Some(seed.clone()));
    assert_identical("bias_dropout_add", y, empty(7));
    let (dx, dbias) = CpuFlex::fused_bias_dropout_add_backward(empty(7), 0.1, Some(seed), true);
    assert_identical("bias_dropout_add dx", dx, empty(7));
    assert_identical("bias_dropout_add dbias", dbias.unwrap(), zeros);
}
