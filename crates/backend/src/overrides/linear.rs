//! `linear`: `nn::Linear` on inputs with leading dimensions runs as one product over every
//! position, `[P, in] × [in, out]` (`P` the number of positions), with the input and output
//! reshaped around it.
//!
//! Burn's default `linear` multiplies `[.., S, in]` by the weight broadcast to `[1, .., in,
//! out]`, so that autodiff's weight gradient (`linear_weight_backward`) is one product per
//! batch matrix, `[B, in, S] × [B, S, out]`, written as a `[B, in, out]` tensor and then summed
//! over the batch: `B` times the weight's size in memory (1.2 GB for a BERT-base feed-forward
//! weight at batch 128 in f32) and a reduction over it, where one product over the `B · S`
//! positions gives the sum directly. On rows, the weight gradient is that one product and the
//! bias gradient one sum over the rows. The values are the same products, summed in another
//! order (f32 rounding).
//!
//! The reshapes are views of a contiguous input; a strided one (a transposed activation) is
//! copied once, as the product would have read it.

use crate::counters;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, TensorMetadata};

/// x: `[.., in]`, weight: `[in, out]`, bias: `[out]` → `[.., out]`, in the dtype autocast gave
/// the inputs (the policy lists `linear` as a lower-precision op).
pub fn linear<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
) -> FloatTensor<B> {
    let shape = x.shape();
    let rank = shape.num_dims();
    let in_features = shape[rank - 1];
    if rank <= 2 || in_features == 0 || shape.num_elements() == 0 {
        return B::linear(x, weight, bias);
    }
    counters::bump_kernel("linear_as_rows");
    let positions = shape.num_elements() / in_features;
    let rows = B::float_reshape(x, Shape::new([positions, in_features]));
    let out = B::linear(rows, weight, bias);
    let mut dims = shape.as_slice().to_vec();
    dims[rank - 1] = out.shape()[1];
    B::float_reshape(out, Shape::from(dims))
}
