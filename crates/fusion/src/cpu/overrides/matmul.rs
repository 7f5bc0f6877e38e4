//! `float_matmul`: a batched product whose right operand is one matrix shared by every batch
//! (`nn::Linear` on `[batch, seq, in]` activations: `x · W` with `W` broadcast over the
//! batch) runs as one `[batch · M, K] × [K, N]` product when the left operand's batch and row
//! dimensions walk as one, instead of Flex's one product per batch matrix. One product packs
//! `W` once rather than once per batch, and splits a taller M over the cores.
//!
//! f32 products run [`matmul_f32`] (Flex's GEMM into an output buffer written once); other
//! dtypes Flex's product.

use crate::counters::{MATMUL_F32, MATMUL_FOLDED_BATCH};
use crate::kernels::matmul::matmul_f32;
use burn::backend::Flex;
use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::Shape;
use burn::tensor::ops::FloatTensorOps;

/// `lhs · rhs` over the last two dimensions, batch dimensions broadcast (Flex's semantics).
pub fn float_matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let (lhs, rhs, folded_shape) = match folded(&lhs, &rhs) {
        Some((lhs2, rhs2, out_shape)) => {
            MATMUL_FOLDED_BATCH.bump();
            (lhs2, rhs2, Some(out_shape))
        }
        None => (lhs, rhs, None),
    };
    let out = match matmul_f32(&lhs, &rhs) {
        Some(out) => {
            MATMUL_F32.bump();
            out
        }
        None => Flex::float_matmul(lhs, rhs),
    };
    match folded_shape {
        Some(shape) => Flex::float_reshape(out, shape),
        None => out,
    }
}

/// `(lhs as [batch · M, K], rhs as [K, N], the output's shape)` when `rhs`'s batch dimensions
/// are all 1, `lhs` has batch dimensions, and every batch dimension of `lhs` steps over the
/// rows below it exactly (`stride[d]` = M's stride · the sizes of the dimensions below `d`).
fn folded(lhs: &FlexTensor, rhs: &FlexTensor) -> Option<(FlexTensor, FlexTensor, Shape)> {
    let (l, r) = (lhs.layout(), rhs.layout());
    let (lr, rr) = (l.num_dims(), r.num_dims());
    if lhs.dtype() != rhs.dtype() || lr < 3 || rr < 2 || rr > lr {
        return None;
    }
    let (ls, lst) = (l.shape(), l.strides());
    if r.shape()[..rr - 2].iter().any(|&d| d != 1) {
        return None;
    }
    // Batch dimensions and M must merge into one dimension of stride `lst[lr - 2]`: each batch
    // dimension (of size above 1) steps over all the rows below it.
    let mut below = lst[lr - 2] * ls[lr - 2] as isize;
    for d in (0..lr - 2).rev() {
        if ls[d] != 1 && lst[d] != below {
            return None;
        }
        below *= ls[d] as isize;
    }
    let rows: usize = ls[..lr - 1].iter().product();
    let (k, n) = (ls[lr - 1], r.shape()[rr - 1]);
    let lhs2 = lhs.clone().with_layout(Layout::new(
        Shape::new([rows, k]),
        vec![lst[lr - 2], lst[lr - 1]],
        l.start_offset(),
    ));
    let rst = r.strides();
    let rhs2 = rhs.clone().with_layout(Layout::new(
        Shape::new([r.shape()[rr - 2], n]),
        vec![rst[rr - 2], rst[rr - 1]],
        r.start_offset(),
    ));
    let mut out = ls.to_vec();
    out[lr - 1] = n;
    Some((lhs2, rhs2, Shape::from(out)))
}
