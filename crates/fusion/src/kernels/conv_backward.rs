//! The backward pass of a 2-D convolution (groups = 1, f32) as one large matrix product each.
//!
//! With `P = Ho·Wo` output positions per image and `CKK = C_in·kh·kw` weights per output
//! channel, the im2col matrix `cols: [CKK, N·P]` holds, in row `(ci, kh, kw)` and column
//! `(n, oh, ow)`, the input element the weight `(·, ci, kh, kw)` met at that output position
//! (0 in the padding). Then (Caffe's and PyTorch's CPU formulation):
//!
//! ```text
//! dW = dYᵀ · colsᵀ        dYᵀ: [C_out, N·P] (dY with batch and channel swapped)
//! dcols = Wᵀ · dYᵀ        W: [C_out, CKK];  dX = col2im(dcols)
//! ```
//!
//! Burn's default instead computes `dW` as a convolution of the swapped input by the swapped
//! output gradient (a kernel of `Ho × Wo`: on Flex, one thin product per input channel) and
//! `dX` as a transposed convolution (a product and a single-threaded scatter per image). Both
//! products here run in Flex's multi-threaded gemm; im2col, col2im and the transposes run in
//! parallel over rows or planes. Images are processed in groups so that `cols` stays under
//! [`COLS_BUDGET`] elements.
//!
//! The sums are the same as Burn's, in another order: results agree to f32 rounding.

use super::contiguous::contiguous;
use burn::backend::Flex;
use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::ops::{ConvOptions, FloatTensorOps};
use burn::tensor::{Bytes, DType, Shape};
use rayon::prelude::*;

/// Most elements of one im2col matrix (128 MiB of f32); larger batches run in groups.
const COLS_BUDGET: usize = 32 << 20;

/// The sizes of one convolution, from its input, weight and output gradient.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    batch: usize,
    c_in: usize,
    h: usize,
    w: usize,
    c_out: usize,
    kh: usize,
    kw: usize,
    ho: usize,
    wo: usize,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
}

impl Geometry {
    fn new(x: &[usize], weight: &[usize], grad: &[usize], options: &ConvOptions<2>) -> Self {
        Self {
            batch: x[0],
            c_in: x[1],
            h: x[2],
            w: x[3],
            c_out: weight[0],
            kh: weight[2],
            kw: weight[3],
            ho: grad[2],
            wo: grad[3],
            stride: options.stride,
            padding: options.padding,
            dilation: options.dilation,
        }
    }

    /// Output positions per image.
    fn positions(&self) -> usize {
        self.ho * self.wo
    }

    /// Rows of the im2col matrix: `C_in · kh · kw`.
    fn ckk(&self) -> usize {
        self.c_in * self.kh * self.kw
    }

    /// Images per group, so that one group's im2col matrix fits [`COLS_BUDGET`].
    fn images_per_group(&self) -> usize {
        (COLS_BUDGET / (self.ckk() * self.positions()).max(1)).clamp(1, self.batch)
    }

    /// The input row `ih` an output row `oh` reads through kernel row `k`, if inside.
    #[inline]
    fn input_row(&self, oh: usize, k: usize) -> Option<usize> {
        (oh * self.stride[0] + k * self.dilation[0])
            .checked_sub(self.padding[0])
            .filter(|&ih| ih < self.h)
    }

    /// For a stride of 1 along the width: the output columns `ow0..ow1` that kernel column `k`
    /// reads inside the input, and the input column of `ow0` (the others follow one by one).
    /// `None` for larger strides.
    #[inline]
    fn unit_stride_cols(&self, k: usize) -> Option<(usize, usize, usize)> {
        if self.stride[1] != 1 {
            return None;
        }
        // iw = ow + reach − padding: inside for padding − reach ≤ ow < w + padding − reach.
        let (reach, pad) = (k * self.dilation[1], self.padding[1]);
        let ow0 = pad.saturating_sub(reach);
        let ow1 = (self.w + pad).saturating_sub(reach).min(self.wo);
        if ow1 <= ow0 {
            return Some((0, 0, 0));
        }
        Some((ow0, ow1, ow0 + reach - pad))
    }

    /// The input column an output column `ow` reads through kernel column `k`, if inside.
    #[inline]
    fn input_col(&self, ow: usize, k: usize) -> Option<usize> {
        (ow * self.stride[1] + k * self.dilation[1])
            .checked_sub(self.padding[1])
            .filter(|&iw| iw < self.w)
    }
}

/// Whether these kernels compute the backward of this convolution: f32, groups = 1.
pub fn takes(
    x: &FlexTensor,
    weight: &FlexTensor,
    grad: &FlexTensor,
    options: &ConvOptions<2>,
) -> bool {
    options.groups == 1
        && [x, weight, grad].iter().all(|t| t.dtype() == DType::F32)
        && x.layout().num_dims() == 4
}

/// `∂L/∂W` of `conv2d(x, weight)`: `[C_out, C_in, kh, kw]`, f32.
///
/// x: `[N, C_in, H, W]`; weight: `[C_out, C_in, kh, kw]`; grad: `[N, C_out, Ho, Wo]`.
pub fn conv2d_weight_backward_f32(
    x: FlexTensor,
    weight: &FlexTensor,
    grad: FlexTensor,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let x = contiguous(x);
    let grad = contiguous(grad);
    let g = Geometry::new(
        x.layout().shape(),
        weight.layout().shape(),
        grad.layout().shape(),
        options,
    );
    let (xs, gs): (&[f32], &[f32]) = (x.storage(), grad.storage());
    let mut total: Option<FlexTensor> = None;
    for first in (0..g.batch).step_by(g.images_per_group()) {
        let images = g.images_per_group().min(g.batch - first);
        let cols = im2col(&g, xs, first, images);
        let grad_t = channels_first(&g, gs, first, images);
        // [C_out, n·P] × [n·P, CKK]: the columns' transpose is a strided view.
        let part = Flex::float_matmul(grad_t, cols.transpose(0, 1));
        total = Some(match total {
            None => part,
            Some(sum) => Flex::float_add(sum, part),
        });
    }
    let dw = total.expect("a convolution has at least one image");
    Flex::float_reshape(dw, Shape::new([g.c_out, g.c_in, g.kh, g.kw]))
}

/// `∂L/∂x` of `conv2d(x, weight)`: `[N, C_in, H, W]`, f32.
///
/// x: `[N, C_in, H, W]` (its shape only); weight: `[C_out, C_in, kh, kw]`; grad:
/// `[N, C_out, Ho, Wo]`.
pub fn conv2d_x_backward_f32(
    x: &FlexTensor,
    weight: FlexTensor,
    grad: FlexTensor,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let weight = contiguous(weight);
    let grad = contiguous(grad);
    let g = Geometry::new(
        x.layout().shape(),
        weight.layout().shape(),
        grad.layout().shape(),
        options,
    );
    let gs: &[f32] = grad.storage();
    // Wᵀ: [CKK, C_out], a view of the weight as [C_out, CKK].
    let w_t = Flex::float_reshape(weight, Shape::new([g.c_out, g.ckk()])).transpose(0, 1);
    let plane = g.h * g.w;
    let mut dx = vec![0f32; g.batch * g.c_in * plane];
    for first in (0..g.batch).step_by(g.images_per_group()) {
        let images = g.images_per_group().min(g.batch - first);
        let grad_t = channels_first(&g, gs, first, images);
        let dcols = Flex::float_matmul(w_t.clone(), grad_t);
        let dcols: &[f32] = dcols.storage();
        let planes = &mut dx[first * g.c_in * plane..(first + images) * g.c_in * plane];
        col2im(&g, dcols, images, planes);
    }
    FlexTensor::new(
        Bytes::from_elems(dx),
        Layout::contiguous(Shape::new([g.batch, g.c_in, g.h, g.w])),
        DType::F32,
    )
}

/// The im2col matrix of images `first..first + images`: `[CKK, images · P]`, row
/// `(ci, kh, kw)`, column `(n, oh, ow)`.
fn im2col(g: &Geometry, x: &[f32], first: usize, images: usize) -> FlexTensor {
    let p = g.positions();
    let width = images * p;
    let mut cols = vec![0f32; g.ckk() * width];
    cols.par_chunks_mut(width).enumerate().for_each(|(r, row)| {
        let (ci, k) = (r / (g.kh * g.kw), r % (g.kh * g.kw));
        let (kh, kw) = (k / g.kw, k % g.kw);
        for n in 0..images {
            let plane = &x[((first + n) * g.c_in + ci) * g.h * g.w..][..g.h * g.w];
            for oh in 0..g.ho {
                let Some(ih) = g.input_row(oh, kh) else {
                    continue;
                };
                let src = &plane[ih * g.w..(ih + 1) * g.w];
                let dst = &mut row[n * p + oh * g.wo..][..g.wo];
                if let Some((ow0, ow1, iw0)) = g.unit_stride_cols(kw) {
                    // One run of the input row (the padding stays 0).
                    dst[ow0..ow1].copy_from_slice(&src[iw0..iw0 + (ow1 - ow0)]);
                    continue;
                }
                for (ow, d) in dst.iter_mut().enumerate() {
                    if let Some(iw) = g.input_col(ow, kw) {
                        *d = src[iw];
                    }
                }
            }
        }
    });
    FlexTensor::new(
        Bytes::from_elems(cols),
        Layout::contiguous(Shape::new([g.ckk(), width])),
        DType::F32,
    )
}

/// The output gradient of images `first..first + images` with batch and channel swapped:
/// `[C_out, images · P]`.
fn channels_first(g: &Geometry, grad: &[f32], first: usize, images: usize) -> FlexTensor {
    let p = g.positions();
    let width = images * p;
    let mut out = vec![0f32; g.c_out * width];
    out.par_chunks_mut(width).enumerate().for_each(|(co, row)| {
        for n in 0..images {
            let src = &grad[((first + n) * g.c_out + co) * p..][..p];
            row[n * p..(n + 1) * p].copy_from_slice(src);
        }
    });
    FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(Shape::new([g.c_out, width])),
        DType::F32,
    )
}

/// Adds the columns `dcols: [CKK, images · P]` back onto the input planes they were read from:
/// `planes` holds `images · C_in` planes of `H · W`, each written by one task.
fn col2im(g: &Geometry, dcols: &[f32], images: usize, planes: &mut [f32]) {
    let p = g.positions();
    let width = images * p;
    planes
        .par_chunks_mut(g.h * g.w)
        .enumerate()
        .for_each(|(index, plane)| {
            let (n, ci) = (index / g.c_in, index % g.c_in);
            for kh in 0..g.kh {
                for kw in 0..g.kw {
                    let r = (ci * g.kh + kh) * g.kw + kw;
                    let row = &dcols[r * width + n * p..][..p];
                    for oh in 0..g.ho {
                        let Some(ih) = g.input_row(oh, kh) else {
                            continue;
                        };
                        let dst = &mut plane[ih * g.w..(ih + 1) * g.w];
                        let src = &row[oh * g.wo..(oh + 1) * g.wo];
                        if let Some((ow0, ow1, iw0)) = g.unit_stride_cols(kw) {
                            let dst = &mut dst[iw0..iw0 + (ow1 - ow0)];
                            for (d, &v) in dst.iter_mut().zip(&src[ow0..ow1]) {
                                *d += v;
                            }
                            continue;
                        }
                        for (ow, &v) in src.iter().enumerate() {
                            if let Some(iw) = g.input_col(ow, kw) {
                                dst[iw] += v;
                            }
                        }
                    }
                }
            }
        });
}
