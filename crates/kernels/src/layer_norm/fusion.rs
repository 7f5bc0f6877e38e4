//! [`LayerNormKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is):
//! each call is recorded as one custom operation that, when the fusion stream executes, runs
//! the inner backend's fused method on the materialized inputs.
//!
//! Fusion cannot see inside a custom operation, so it is a barrier: the element-wise ops
//! recorded before it are flushed as their own fused kernels and those after it start a new
//! fusion. Like every fusion op it runs lazily, when a result is read or the stream is flushed.
//!
//! Output shapes and dtypes must be declared when the operation is recorded, before the inner
//! backend runs: `y` and `dx` take the shape and dtype of `x`; `dgamma`, `dbeta` those of
//! `gamma`; the statistics `mean`, `rstd` are `[rows]` in f32, which is what the CubeCL
//! kernels produce for every input dtype. The inner results are checked against these
//! declarations, since a mismatch would silently corrupt what fusion believes of the tensors.

use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime};

use super::LayerNormKernel;

/// Custom op id of the forward; inputs `[x, gamma, beta]`, outputs `[y, mean, rstd]`.
const FORWARD_ID: &str = "burnacc_layer_norm_forward";
/// Custom op id of the backward; inputs `[x, gamma, grad_out, mean, rstd]`, outputs
/// `[dx, dgamma, dbeta]`.
const BACKWARD_ID: &str = "burnacc_layer_norm_backward";

/// Which method of the inner backend the recorded operation runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Forward { eps: f64 },
    Backward,
}

/// One recorded LayerNorm call on the inner backend `B`.
#[derive(Debug)]
struct LayerNormOp<B> {
    desc: CustomOpIr,
    kind: Kind,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend + LayerNormKernel> Operation<B::FusionRuntime> for LayerNormOp<B> {
    fn execute(
        &self,
        handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    ) {
        let outputs = match self.kind {
            Kind::Forward { eps } => {
                let ([x, gamma, beta], _) = self.desc.as_fixed::<3, 3>();
                let (y, mean, rstd) = B::fused_layer_norm_with_stats(
                    handles.get_float_tensor::<B>(x),
                    handles.get_float_tensor::<B>(gamma),
                    handles.get_float_tensor::<B>(beta),
                    eps,
                );
                [y, mean, rstd]
            }
            Kind::Backward => {
                let ([x, gamma, grad_out, mean, rstd], _) = self.desc.as_fixed::<5, 3>();
                let (dx, dgamma, dbeta) = B::fused_layer_norm_backward(
                    handles.get_float_tensor::<B>(x),
                    handles.get_float_tensor::<B>(gamma),
                    handles.get_float_tensor::<B>(grad_out),
                    handles.get_float_tensor::<B>(mean),
                    handles.get_float_tensor::<B>(rstd),
                );
                [dx, dgamma, dbeta]
            }
        };
        for (ir, tensor) in self.desc.outputs.iter().zip(outputs) {
            assert!(
                tensor.dtype() == ir.dtype && tensor.shape() == ir.shape,
                "{}: the inner backend returned {:?} {:?} where {:?} {:?} was declared",
                self.desc.id,
                tensor.dtype(),
                tensor.shape(),
                ir.dtype,
                ir.shape,
            );
            handles.register_float_tensor::<B>(&ir.id, tensor);
        }
    }
}

/// `[..., width]` → `rows`, the product of the leading dimensions (the statistics' length).
fn rows(shape: &Shape) -> usize {
    let (_, leading) = shape
        .as_slice()
        .split_last()
        .expect("layer_norm: the input must have at least one dimension");
    leading.iter().product()
}

/// Records `kind` with `inputs` (in the order its `execute` reads them) and outputs of the
/// given shapes and dtypes, and returns the (lazy) output tensors.
fn record<B: FusionBackend + LayerNormKernel>(
    id: &'static str,
    kind: Kind,
    inputs: Vec<FloatTensor<Fusion<B>>>,
    outputs: [(Shape, DType); 3],
) -> [FloatTensor<Fusion<B>>; 3] {
    // All inputs live on one device, hence one fusion client.
    let client = inputs[0].client.clone();
    // Registers each input's stream, so that the operation waits for whatever produces them.
    let streams = OperationStreams::with_inputs(&inputs);
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
    let outputs =
        outputs.map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape, dtype));
    let desc = CustomOpIr::new(id, &inputs, &outputs);
    let op = LayerNormOp::<B> {
        desc: desc.clone(),
        kind,
        _backend: PhantomData,
    };
    client
        .register(streams, OperationIr::Custom(desc), op)
        .outputs()
}

impl<B: FusionBackend + LayerNormKernel> LayerNormKernel for Fusion<B> {
    /// `(y, mean, rstd)`: `y` like `x`, `mean` and `rstd` `[rows]` in f32.
    fn fused_layer_norm_with_stats(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let stats = Shape::new([rows(&x.shape)]);
        let outputs = [
            (x.shape.clone(), x.dtype),
            (stats.clone(), DType::F32),
            (stats, DType::F32),
        ];
        let [y, mean, rstd] = record::<B>(
            FORWARD_ID,
            Kind::Forward { eps },
            vec![x, gamma, beta],
            outputs,
        );
        (y, mean, rstd)
    }

    /// `(dx, dgamma, dbeta)`: `dx` like `x`, `dgamma` and `dbeta` like `gamma`.
    fn fused_layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        rstd: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let outputs = [
            (x.shape.clone(), x.dtype),
            (gamma.shape.clone(), gamma.dtype),
            (gamma.shape.clone(), gamma.dtype),
        ];
        let [dx, dgamma, dbeta] = record::<B>(
            BACKWARD_ID,
            Kind::Backward,
            vec![x, gamma, grad_out, mean, rstd],
            outputs,
        );
        (dx, dgamma, dbeta)
    }
}
