//! mmcv's `DeformConv2dPack` (DCN v1) and `ModulatedDeformConv2dPack` (DCNv2): a deformable
//! convolution whose offsets (and, for v2, mask) come from a regular convolution of the same
//! input, `conv_offset`, with the layer's kernel size, stride, padding and dilation.
//!
//! Parameter names and layouts are mmcv's (`weight`, `bias`, `conv_offset.weight`,
//! `conv_offset.bias`), so a state dict of an mmdet model maps key for key. As in mmcv,
//! `conv_offset` starts at zero: a freshly built layer samples the regular grid and equals a
//! plain convolution with its `weight` and `bias`. v2 splits `conv_offset`'s output into
//! `(o1, o2, m)` thirds along the channels; the offsets are `cat(o1, o2)` and the mask
//! `sigmoid(m)`.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::Initializer;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::tensor::Tensor;
use burn::tensor::activation::sigmoid;
use burn::tensor::backend::Backend;
use burn::tensor::ops::DeformConvOptions;

use super::{DcnError, DcnKernel, deform_conv2d};

/// Settings of both layers (mmcv's constructor arguments).
#[derive(Config, Debug)]
pub struct DeformConv2dPackConfig {
    /// `[C_in, C_out]`.
    pub channels: [usize; 2],
    /// `[kh, kw]`.
    pub kernel_size: [usize; 2],
    /// Stride.
    #[config(default = "[1, 1]")]
    pub stride: [usize; 2],
    /// Zero padding on each side.
    #[config(default = "[0, 0]")]
    pub padding: [usize; 2],
    /// Dilation.
    #[config(default = "[1, 1]")]
    pub dilation: [usize; 2],
    /// Weight groups (mmcv's `groups`).
    #[config(default = 1)]
    pub groups: usize,
    /// Offset groups (mmcv's `deform_groups`).
    #[config(default = 1)]
    pub deform_groups: usize,
    /// Whether the layer has a bias (mmcv: `bias=False` for v1 by default, `True` for v2).
    #[config(default = true)]
    pub bias: bool,
}

impl DeformConv2dPackConfig {
    /// `weight` `[C_out, C_in / groups, kh, kw]` drawn as mmcv does (uniform in ±1/√(C_in·kh·kw))
    /// and a zero `bias`.
    fn weight_and_bias<B: Backend>(
        &self,
        device: &B::Device,
    ) -> (Param<Tensor<B, 4>>, Option<Param<Tensor<B, 1>>>) {
        let [c_in, c_out] = self.channels;
        let [kh, kw] = self.kernel_size;
        let bound = 1.0 / ((c_in * kh * kw) as f64).sqrt();
        let weight = Initializer::Uniform {
            min: -bound,
            max: bound,
        }
        .init([c_out, c_in / self.groups.max(1), kh, kw], device);
        let bias = self.bias.then(|| Initializer::Zeros.init([c_out], device));
        (weight, bias)
    }

    /// `conv_offset`: `C_in` → `per_tap · deform_groups · kh · kw` channels, the layer's
    /// geometry, all zeros.
    fn conv_offset<B: Backend>(&self, per_tap: usize, device: &B::Device) -> Conv2d<B> {
        let [kh, kw] = self.kernel_size;
        Conv2dConfig::new(
            [self.channels[0], per_tap * self.deform_groups * kh * kw],
            self.kernel_size,
        )
        .with_stride(self.stride)
        .with_padding(PaddingConfig2d::Explicit(
            self.padding[0],
            self.padding[1],
            self.padding[0],
            self.padding[1],
        ))
        .with_dilation(self.dilation)
        .with_initializer(Initializer::Zeros)
        .init(device)
    }

    /// A DCN v1 layer (offsets only).
    pub fn init<B: Backend>(&self, device: &B::Device) -> DeformConv2dPack<B> {
        let (weight, bias) = self.weight_and_bias(device);
        DeformConv2dPack {
            weight,
            bias,
            conv_offset: self.conv_offset(2, device),
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            groups: self.groups,
            deform_groups: self.deform_groups,
        }
    }

    /// A DCNv2 layer (offsets and mask).
    pub fn init_modulated<B: Backend>(&self, device: &B::Device) -> ModulatedDeformConv2dPack<B> {
        let (weight, bias) = self.weight_and_bias(device);
        ModulatedDeformConv2dPack {
            weight,
            bias,
            conv_offset: self.conv_offset(3, device),
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            groups: self.groups,
            deform_groups: self.deform_groups,
        }
    }
}

/// mmcv's `DeformConv2dPack`: DCN v1 with its own offset convolution.
#[derive(Module, Debug)]
pub struct DeformConv2dPack<B: Backend> {
    /// `[C_out, C_in / groups, kh, kw]`.
    pub weight: Param<Tensor<B, 4>>,
    /// `[C_out]`.
    pub bias: Option<Param<Tensor<B, 1>>>,
    /// Predicts the offsets: `C_in` → `2 · deform_groups · kh · kw` channels.
    pub conv_offset: Conv2d<B>,
    /// Stride.
    pub stride: [usize; 2],
    /// Zero padding on each side.
    pub padding: [usize; 2],
    /// Dilation.
    pub dilation: [usize; 2],
    /// Weight groups.
    pub groups: usize,
    /// Offset groups.
    pub deform_groups: usize,
}

impl<B: DcnKernel> DeformConv2dPack<B> {
    /// x: `[N, C_in, H, W]` → `[N, C_out, H_out, W_out]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Result<Tensor<B, 4>, DcnError> {
        let offset = self.conv_offset.forward(x.clone());
        deform_conv2d(
            x,
            offset,
            self.weight.val(),
            None,
            self.bias.as_ref().map(Param::val),
            options(
                self.stride,
                self.padding,
                self.dilation,
                self.groups,
                self.deform_groups,
            ),
        )
    }
}

/// mmcv's `ModulatedDeformConv2dPack`: DCNv2 with its own offset-and-mask convolution.
#[derive(Module, Debug)]
pub struct ModulatedDeformConv2dPack<B: Backend> {
    /// `[C_out, C_in / groups, kh, kw]`.
    pub weight: Param<Tensor<B, 4>>,
    /// `[C_out]`.
    pub bias: Option<Param<Tensor<B, 1>>>,
    /// Predicts offsets and mask: `C_in` → `3 · deform_groups · kh · kw` channels.
    pub conv_offset: Conv2d<B>,
    /// Stride.
    pub stride: [usize; 2],
    /// Zero padding on each side.
    pub padding: [usize; 2],
    /// Dilation.
    pub dilation: [usize; 2],
    /// Weight groups.
    pub groups: usize,
    /// Offset groups.
    pub deform_groups: usize,
}

impl<B: DcnKernel> ModulatedDeformConv2dPack<B> {
    /// x: `[N, C_in, H, W]` → `[N, C_out, H_out, W_out]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Result<Tensor<B, 4>, DcnError> {
        let out = self.conv_offset.forward(x.clone());
        let [o1, o2, mask] = <[Tensor<B, 4>; 3]>::try_from(out.chunk(3, 1))
            .expect("conv_offset has 3 · deform_groups · kh · kw channels");
        deform_conv2d(
            x,
            Tensor::cat(vec![o1, o2], 1),
            self.weight.val(),
            Some(sigmoid(mask)),
            self.bias.as_ref().map(Param::val),
            options(
                self.stride,
                self.padding,
                self.dilation,
                self.groups,
                self.deform_groups,
            ),
        )
    }
}

fn options(
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
    deform_groups: usize,
) -> DeformConvOptions<2> {
    DeformConvOptions::new(stride, padding, dilation, groups, deform_groups)
}
