//! Deformable convolution, v1 (offsets) and v2 (offsets and a modulation mask): torchvision's
//! `deform_conv2d` with its argument checks, and mmcv's `DeformConv2dPack` /
//! `ModulatedDeformConv2dPack` layers (the DCN of mmdet's backbones and heads), which predict
//! their offsets (and mask) with a convolution of their own.
//!
//! Shapes (torchvision's and mmcv's layouts):
//! - `x`: `[N, C_in, H, W]`;
//! - `weight`: `[C_out, C_in / weight_groups, kh, kw]`, `bias`: `[C_out]`;
//! - `offset`: `[N, 2 · offset_groups · kh · kw, H_out, W_out]`, for each offset group and
//!   kernel tap a `(dy, dx)` pair, in that order;
//! - `mask`: `[N, offset_groups · kh · kw, H_out, W_out]`.
//!
//! The forward pass is Burn's `deform_conv2d`. The backward ([`DcnKernel::dcn_backward`]) is
//! burnacc's on CubeCL devices: one kernel parallel over (batch, offset group, tap, output
//! position) samples the input once and yields the offset, mask and input gradients and the
//! weight gradient's columns, between two batched matrix products (`kernel`, `launch`);
//! Burn's own backward elsewhere. All five gradients (input, offset, mask, weight, bias) equal
//! torchvision's within 1e-4 relative on Flex and on wgpu (`scripts/record_dcn_fixtures.py`).
//! Burn's CubeCL backward needs the workspace's patched burn-cubecl
//! (`patches/burn-cubecl/PATCH.md`): 0.21.0 read the first kernel tap's column gradient for
//! every tap; it stays as the reference of burnacc's.

mod autodiff;
mod backends;
pub mod counters;
mod kernel;
pub mod launch;
mod pack;

pub use counters::backward_launches;
pub use launch::deform_conv2d_backward_cube;
pub use pack::{DeformConv2dPack, DeformConv2dPackConfig, ModulatedDeformConv2dPack};

use burn::tensor::backend::Backend;
use burn::tensor::ops::{DeformConv2dBackward, DeformConvOptions, FloatTensor};
use burn::tensor::{Tensor, TensorPrimitive};

/// A backend whose deformable convolution may run burnacc's backward.
///
/// The provided methods are Burn's own ops, so any backend can opt in with an empty `impl`;
/// [`burn_cubecl::CubeBackend`] overrides the backward with burnacc's kernel, `Autodiff<B>`
/// records a node whose backward is `B`'s, `Fusion<B>` records `B`'s backward as one
/// operation, and burnacc's `Acc<B>` passes the calls to `B`. Shapes as in the module docs.
pub trait DcnKernel: Backend {
    /// `deform_conv2d(x, offset, weight, mask, bias)`: `[N, C_out, H_out, W_out]`.
    fn dcn_forward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        options: DeformConvOptions<2>,
    ) -> FloatTensor<Self> {
        Self::deform_conv2d(x, offset, weight, mask, bias, options)
    }

    /// The five gradients from the output gradient `grad_out`; `mask_grad` and `bias_grad`
    /// are present iff `mask` and `bias` are.
    fn dcn_backward(
        x: FloatTensor<Self>,
        offset: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        mask: Option<FloatTensor<Self>>,
        bias: Option<FloatTensor<Self>>,
        grad_out: FloatTensor<Self>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        Self::deform_conv2d_backward(x, offset, weight, mask, bias, grad_out, options)
    }
}

/// Bad input to [`deform_conv2d`]; each names the argument and what it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DcnError {
    /// A shape that does not fit the others.
    #[error("{name} is {got:?}, expected {expected}")]
    Shape {
        /// The argument.
        name: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// What it must be, in words.
        expected: String,
    },
    /// A stride, dilation or group count of 0, or groups that do not divide the channels.
    #[error("{name} = {value}: {why}")]
    Option {
        /// The option.
        name: &'static str,
        /// Its value.
        value: usize,
        /// What is wrong with it.
        why: String,
    },
}

fn shape_error(name: &'static str, got: &[usize], expected: String) -> DcnError {
    DcnError::Shape {
        name,
        got: got.to_vec(),
        expected,
    }
}

/// Output side of a convolution along one axis.
fn out_size(size: usize, kernel: usize, stride: usize, padding: usize, dilation: usize) -> usize {
    (size + 2 * padding).saturating_sub(dilation * (kernel - 1) + 1) / stride + 1
}

/// Checks every shape and option of a deformable convolution; returns `[H_out, W_out]`.
pub fn check_deform_conv2d(
    x: [usize; 4],
    offset: [usize; 4],
    weight: [usize; 4],
    mask: Option<[usize; 4]>,
    bias: Option<usize>,
    options: &DeformConvOptions<2>,
) -> Result<[usize; 2], DcnError> {
    let option = |name, value: usize, why: &str| DcnError::Option {
        name,
        value,
        why: why.to_owned(),
    };
    for (name, values) in [("stride", options.stride), ("dilation", options.dilation)] {
        if let Some(&v) = values.iter().find(|&&v| v == 0) {
            return Err(option(name, v, "must be at least 1"));
        }
    }
    let [n, c_in, h, w] = x;
    let [c_out, c_per_group, kh, kw] = weight;
    let (wg, og) = (options.weight_groups, options.offset_groups);
    if wg == 0 || c_in % wg != 0 || c_out % wg != 0 {
        return Err(option(
            "weight_groups",
            wg,
            &format!("must divide the {c_in} input and {c_out} output channels"),
        ));
    }
    if og == 0 || c_in % og != 0 {
        return Err(option(
            "offset_groups",
            og,
            &format!("must divide the {c_in} input channels"),
        ));
    }
    if c_per_group != c_in / wg || kh == 0 || kw == 0 {
        return Err(shape_error(
            "weight",
            &weight,
            format!(
                "[C_out, {} (C_in / weight_groups), kh ≥ 1, kw ≥ 1]",
                c_in / wg
            ),
        ));
    }
    let [sh, sw] = options.stride;
    let [ph, pw] = options.padding;
    let [dh, dw] = options.dilation;
    if h + 2 * ph < dh * (kh - 1) + 1 || w + 2 * pw < dw * (kw - 1) + 1 {
        return Err(shape_error(
            "x",
            &x,
            format!("an image at least as large as the dilated {kh}×{kw} kernel after padding"),
        ));
    }
    let out = [out_size(h, kh, sh, ph, dh), out_size(w, kw, sw, pw, dw)];
    let taps = og * kh * kw;
    if offset != [n, 2 * taps, out[0], out[1]] {
        return Err(shape_error(
            "offset",
            &offset,
            format!(
                "[{n}, {} (2 · offset_groups {og} · {kh} · {kw}), {}, {}]",
                2 * taps,
                out[0],
                out[1]
            ),
        ));
    }
    if let Some(mask) = mask
        && mask != [n, taps, out[0], out[1]]
    {
        return Err(shape_error(
            "mask",
            &mask,
            format!(
                "[{n}, {taps} (offset_groups {og} · {kh} · {kw}), {}, {}]",
                out[0], out[1]
            ),
        ));
    }
    if let Some(len) = bias
        && len != c_out
    {
        return Err(shape_error("bias", &[len], format!("[{c_out}] (C_out)")));
    }
    Ok(out)
}

/// torchvision's `deform_conv2d` (v1 without `mask`, v2 with it): `[N, C_out, H_out, W_out]`,
/// after [`check_deform_conv2d`]. Differentiable in every input on autodiff backends, with
/// burnacc's backward on CubeCL devices.
pub fn deform_conv2d<B: DcnKernel>(
    x: Tensor<B, 4>,
    offset: Tensor<B, 4>,
    weight: Tensor<B, 4>,
    mask: Option<Tensor<B, 4>>,
    bias: Option<Tensor<B, 1>>,
    options: DeformConvOptions<2>,
) -> Result<Tensor<B, 4>, DcnError> {
    check_deform_conv2d(
        x.dims(),
        offset.dims(),
        weight.dims(),
        mask.as_ref().map(Tensor::dims),
        bias.as_ref().map(|b| b.dims()[0]),
        &options,
    )?;
    let float = |t: Tensor<B, 4>| t.into_primitive().tensor();
    let y = B::dcn_forward(
        float(x),
        float(offset),
        float(weight),
        mask.map(float),
        bias.map(|b| b.into_primitive().tensor()),
        options,
    );
    Ok(Tensor::from_primitive(TensorPrimitive::Float(y)))
}
