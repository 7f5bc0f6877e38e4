//! [`BiasDropoutAddKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu`
//! is): each call is recorded as one custom operation that, when the fusion stream executes,
//! runs the inner backend's fused method on the materialized inputs.
//!
//! Fusion cannot see inside a custom operation, so it is a barrier: the element-wise ops
//! recorded before it are flushed as their own fused kernels and those after it start a new
//! fusion. Like every fusion op it runs lazily, when a result is read or the stream is flushed.
//!
//! The seed tensor is one of the operation's inputs, so fusion orders the operation after
//! whatever produces it (e.g. the device draw of [`super::dropout_seed`]) and nothing is read
//! back. `p` and the presence of a bias and of a seed travel in the recorded operation, not in
//! its IR (which only lists tensors). Output shapes and dtypes are declared when the operation is recorded: `y` and
//! `dx` take the shape and dtype of their input, `dbias` is `[width]` in that dtype. The inner
//! results are checked against these declarations, since a mismatch would silently corrupt
//! what fusion believes of the tensors.

use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime};

use super::BiasDropoutAddKernel;

/// Custom op id of the forward; inputs `[x, residual]`, then `bias` if any, then the seed if
/// any; output `[y]`.
const FORWARD_ID: &str = "burnacc_bias_dropout_add_forward";
/// Custom op id of the backward; inputs `[grad_out]`, then the seed if any; outputs `[dx]` or
/// `[dx, dbias]`.
const BACKWARD_ID: &str = "burnacc_bias_dropout_add_backward";

/// Which method of the inner backend the recorded operation runs, with its parameters and
/// which optional inputs were recorded.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Forward {
        p: f64,
        has_bias: bool,
        has_seed: bool,
    },
    Backward {
        p: f64,
        has_seed: bool,
        with_bias: bool,
    },
}

/// One recorded call on the inner backend `B`.
#[derive(Debug)]
struct BiasDropoutAddOp<B> {
    desc: CustomOpIr,
    kind: Kind,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend + BiasDropoutAddKernel> Operation<B::FusionRuntime> for BiasDropoutAddOp<B> {
    fn execute(
        &self,
        handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    ) {
        let mut inputs = self.desc.inputs.iter();
        let mut next = || inputs.next().expect("inputs as recorded");
        let outputs: Vec<FloatTensor<B>> = match self.kind {
            Kind::Forward {
                p,
                has_bias,
                has_seed,
            } => {
                let x = handles.get_float_tensor::<B>(next());
                let residual = handles.get_float_tensor::<B>(next());
                let bias = has_bias.then(|| handles.get_float_tensor::<B>(next()));
                let seed = has_seed.then(|| handles.get_int_tensor::<B>(next()));
                vec![B::fused_bias_dropout_add(x, bias, residual, p, seed)]
            }
            Kind::Backward {
                p,
                has_seed,
                with_bias,
            } => {
                let grad_out = handles.get_float_tensor::<B>(next());
                let seed = has_seed.then(|| handles.get_int_tensor::<B>(next()));
                let (dx, dbias) = B::fused_bias_dropout_add_backward(grad_out, p, seed, with_bias);
                core::iter::once(dx).chain(dbias).collect()
            }
        };
        assert_eq!(outputs.len(), self.desc.outputs.len());
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

/// Records `kind` with `inputs` (in the order its `execute` reads them; float and int
/// primitives are the same type under fusion) and outputs of the given shapes and dtypes, and
/// returns the (lazy) output tensors.
fn record<B: FusionBackend + BiasDropoutAddKernel>(
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
    let op = BiasDropoutAddOp::<B> {
        desc: desc.clone(),
        kind,
        _backend: PhantomData,
    };
    client.register(streams, OperationIr::Custom(desc), op)
}

impl<B: FusionBackend + BiasDropoutAddKernel> BiasDropoutAddKernel for Fusion<B> {
    /// `y` like `x`.
    fn fused_bias_dropout_add(
        x: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let kind = Kind::Forward {
            p,
            has_bias: bias.is_some(),
            has_seed: seed.is_some(),
        };
        let outputs = vec![(x.shape.clone(), x.dtype)];
        let inputs = [x, residual].into_iter().chain(bias).chain(seed).collect();
        let [y] = record::<B>(FORWARD_ID, kind, inputs, outputs)
            .try_into()
            .expect("one output");
        y
    }

    /// `(dx, dbias)`: `dx` like `grad_out`, `dbias` `[width]` in its dtype.
    fn fused_bias_dropout_add_backward(
        grad_out: FloatTensor<Self>,
        p: f64,
        seed: Option<IntTensor<Self>>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let kind = Kind::Backward {
            p,
            has_seed: seed.is_some(),
            with_bias,
        };
        let (shape, dtype) = (grad_out.shape.clone(), grad_out.dtype);
        let width = shape[shape.num_dims() - 1];
        let mut outputs = vec![(shape, dtype)];
        if with_bias {
            outputs.push((Shape::new([width]), dtype));
        }
        let inputs = core::iter::once(grad_out).chain(seed).collect();
        let mut outputs = record::<B>(BACKWARD_ID, kind, inputs, outputs).into_iter();
        let dx = outputs.next().expect("dx is declared");
        (dx, outputs.next())
    }
}
