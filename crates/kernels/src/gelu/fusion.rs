//! [`GeluKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu` is): each
//! call is recorded as one custom operation that, when the fusion stream executes, runs the
//! inner backend's fused method on the materialized inputs.
//!
//! Fusion cannot see inside a custom operation, so it is a barrier: the element-wise ops
//! recorded before it are flushed as their own fused kernels and those after it start a new
//! fusion. Like every fusion op it runs lazily, when a result is read or the stream is flushed.
//!
//! Output shapes and dtypes are declared when the operation is recorded, before the inner
//! backend runs: `y` and `dx` take the shape and dtype of `x`, `dbias` those of `bias`. The
//! inner results are checked against these declarations, since a mismatch would silently
//! corrupt what fusion believes of the tensors. Whether a bias GELU has a bias is carried by the
//! recorded operation itself (its input count), so one id serves both forms.

use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime};

use super::GeluKernel;

/// Custom op id of the QuickGELU forward; inputs `[x]`, outputs `[y]`.
const QUICK_FORWARD_ID: &str = "burnacc_quick_gelu_forward";
/// Custom op id of the QuickGELU backward; inputs `[x, grad_out]`, outputs `[dx]`.
const QUICK_BACKWARD_ID: &str = "burnacc_quick_gelu_backward";
/// Custom op id of the bias + GELU forward; inputs `[x, bias]` or `[x]`, outputs `[y]`.
const BIAS_FORWARD_ID: &str = "burnacc_bias_gelu_forward";
/// Custom op id of the bias + GELU backward; inputs `[x, bias, grad_out]` or `[x, grad_out]`,
/// outputs `[dx, dbias]` or `[dx]`.
const BIAS_BACKWARD_ID: &str = "burnacc_bias_gelu_backward";

/// Which method of the inner backend the recorded operation runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    QuickForward,
    QuickBackward,
    BiasForward { has_bias: bool },
    BiasBackward { has_bias: bool },
}

/// One recorded GELU call on the inner backend `B`.
#[derive(Debug)]
struct GeluOp<B> {
    desc: CustomOpIr,
    kind: Kind,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend + GeluKernel> Operation<B::FusionRuntime> for GeluOp<B> {
    fn execute(
        &self,
        handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    ) {
        let mut inputs = self
            .desc
            .inputs
            .iter()
            .map(|ir| handles.get_float_tensor::<B>(ir));
        let mut next = || inputs.next().expect("the recorded inputs match the kind");
        let outputs: Vec<FloatTensor<B>> = match self.kind {
            Kind::QuickForward => vec![B::fused_quick_gelu(next())],
            Kind::QuickBackward => {
                let x = next();
                vec![B::fused_quick_gelu_backward(x, next())]
            }
            Kind::BiasForward { has_bias } => {
                let x = next();
                let bias = has_bias.then(&mut next);
                vec![B::fused_bias_gelu(x, bias)]
            }
            Kind::BiasBackward { has_bias } => {
                let x = next();
                let bias = has_bias.then(&mut next);
                let (dx, dbias) = B::fused_bias_gelu_backward(x, bias, next());
                core::iter::once(dx).chain(dbias).collect()
            }
        };
        assert_eq!(
            outputs.len(),
            self.desc.outputs.len(),
            "{}: output count",
            self.desc.id
        );
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

/// Records `kind` with `inputs` (in the order its `execute` reads them) and outputs of the
/// given shapes and dtypes, and returns the (lazy) output tensors.
fn record<B: FusionBackend + GeluKernel>(
    id: &'static str,
    kind: Kind,
    inputs: Vec<FloatTensor<Fusion<B>>>,
    outputs: Vec<(Shape, DType)>,
) -> Vec<FloatTensor<Fusion<B>>> {
    // All inputs live on one device, hence one fusion client.
    let client = inputs[0].client.clone();
    // Registers each input's stream, so that the operation waits for whatever produces them.
    let streams = OperationStreams::with_inputs(&inputs);
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
    let outputs: Vec<TensorIr> = outputs
        .into_iter()
        .map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape, dtype))
        .collect();
    let desc = CustomOpIr::new(id, &inputs, &outputs);
    let op = GeluOp::<B> {
        desc: desc.clone(),
        kind,
        _backend: PhantomData,
    };
    client.register(streams, OperationIr::Custom(desc), op)
}

/// The single output of a recorded operation.
fn single<T>(outputs: Vec<T>) -> T {
    let [out]: [T; 1] = outputs
        .try_into()
        .unwrap_or_else(|_| panic!("one output was declared"));
    out
}

impl<B: FusionBackend + GeluKernel> GeluKernel for Fusion<B> {
    fn fused_quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = vec![(x.shape.clone(), x.dtype)];
        single(record::<B>(
            QUICK_FORWARD_ID,
            Kind::QuickForward,
            vec![x],
            out,
        ))
    }

    fn fused_quick_gelu_backward(
        x: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let out = vec![(x.shape.clone(), x.dtype)];
        let inputs = vec![x, grad_out];
        single(record::<B>(
            QUICK_BACKWARD_ID,
            Kind::QuickBackward,
            inputs,
            out,
        ))
    }

    fn fused_bias_gelu(x: FloatTensor<Self>, bias: Option<FloatTensor<Self>>) -> FloatTensor<Self> {
        let out = vec![(x.shape.clone(), x.dtype)];
        let kind = Kind::BiasForward {
            has_bias: bias.is_some(),
        };
        let inputs = core::iter::once(x).chain(bias).collect();
        single(record::<B>(BIAS_FORWARD_ID, kind, inputs, out))
    }

    fn fused_bias_gelu_backward(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let mut outputs = vec![(x.shape.clone(), x.dtype)];
        outputs.extend(bias.as_ref().map(|b| (b.shape.clone(), b.dtype)));
        let kind = Kind::BiasBackward {
            has_bias: bias.is_some(),
        };
        let inputs = core::iter::once(x)
            .chain(bias)
            .chain(core::iter::once(grad_out))
            .collect();
        let mut outputs = record::<B>(BIAS_BACKWARD_ID, kind, inputs, outputs).into_iter();
        let dx = outputs.next().expect("dx was declared");
        (dx, outputs.next())
    }
}
