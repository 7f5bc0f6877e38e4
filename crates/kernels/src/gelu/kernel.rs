//! Element-wise CubeCL kernels of the fused GELUs: one unit per vector of `N` elements, one read
//! of each input and one write of the output, so each kernel is a single pass over memory.
//!
//! Every tensor is contiguous and read as vectors of `N` storage floats `F`; the values are
//! widened to f32, the formula of [`super::math`] applied, and the result narrowed back to `F`.
//! The launcher picks `N` so that it divides the length (and, for `bias_gelu_forward_kernel`,
//! the width), and sizes the grid to cover every vector; extra units exit at once.

use burn::cubecl;
use cubecl::prelude::*;

use super::math::{gelu, gelu_grad, quick_gelu, quick_gelu_grad};

/// `y = x · sigmoid(1.702 x)`; `x`, `y`: `[len]` as vectors of `N`, storage `F`.
#[cube(launch)]
pub(crate) fn quick_gelu_forward_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    y: &mut Tensor<Vector<F, N>>,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= y.len() {
        terminate!();
    }
    let x = Vector::<f32, N>::cast_from(x[i]);
    y[i] = Vector::cast_from(quick_gelu::<N>(x));
}

/// `dx = dy · q'(x)` for QuickGELU; `x`, `dy`, `dx`: `[len]` as vectors of `N`, storage `F`.
#[cube(launch)]
pub(crate) fn quick_gelu_backward_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    dy: &Tensor<Vector<F, N>>,
    dx: &mut Tensor<Vector<F, N>>,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= dx.len() {
        terminate!();
    }
    let x = Vector::<f32, N>::cast_from(x[i]);
    let dy = Vector::<f32, N>::cast_from(dy[i]);
    dx[i] = Vector::cast_from(dy * quick_gelu_grad::<N>(x));
}

/// Exact GELU without bias, `y = gelu(x)`; `x`, `y`: `[len]` as vectors of `N`, storage `F`.
#[cube(launch)]
pub(crate) fn gelu_forward_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    y: &mut Tensor<Vector<F, N>>,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= y.len() {
        terminate!();
    }
    let x = Vector::<f32, N>::cast_from(x[i]);
    y[i] = Vector::cast_from(gelu::<N>(x));
}

/// `dx = dy · gelu'(x)` (no bias); `x`, `dy`, `dx`: `[len]` as vectors of `N`, storage `F`.
#[cube(launch)]
pub(crate) fn gelu_backward_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    dy: &Tensor<Vector<F, N>>,
    dx: &mut Tensor<Vector<F, N>>,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= dx.len() {
        terminate!();
    }
    let x = Vector::<f32, N>::cast_from(x[i]);
    let dy = Vector::<f32, N>::cast_from(dy[i]);
    dx[i] = Vector::cast_from(dy * gelu_grad::<N>(x));
}

/// `y = gelu(x + bias)`, bias broadcast over the rows.
///
/// - `x`, `y`: `[rows, width]` contiguous, read as `[rows · width / N]` vectors, storage `F`;
/// - `bias`: `[width]` contiguous, `width / N` vectors, storage `F`.
///
/// `N` divides `width`, so a vector never straddles two rows and the column of vector `i` is
/// `i mod (width / N)`, which is the bias vector to add.
#[cube(launch)]
pub(crate) fn bias_gelu_forward_kernel<F: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    bias: &Tensor<Vector<F, N>>,
    y: &mut Tensor<Vector<F, N>>,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= y.len() {
        terminate!();
    }
    let col = i % bias.len();
    let z = Vector::<f32, N>::cast_from(x[i]) + Vector::<f32, N>::cast_from(bias[col]);
    y[i] = Vector::cast_from(gelu::<N>(z));
}
