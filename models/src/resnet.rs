//! ResNet-18/34/50/101/152.
//!
//! Paper: K. He, X. Zhang, S. Ren, J. Sun, "Deep Residual Learning for Image Recognition",
//! CVPR 2016, <https://arxiv.org/abs/1512.03385>.
//! Reference implementation matched: torchvision `torchvision/models/resnet.py`
//! (`ResNet`, `BasicBlock`, `Bottleneck`, `_make_layer`), ResNet **v1.5**: the bottleneck puts
//! its stride on the 3×3 convolution (`conv2`), not on the first 1×1 convolution as the paper
//! does. This is torchvision's and NVIDIA's ResNet-50 (about +0.5 % top-1, slightly slower).
//!
//! Structure and parameter names follow torchvision field for field, so that weights map one to
//! one (see [`crate::params::torch_key`]):
//!
//! | Burn path                          | torchvision `state_dict` key       | note                    |
//! |------------------------------------|------------------------------------|-------------------------|
//! | `conv1.weight`                     | `conv1.weight`                     | `[out, in, kh, kw]`     |
//! | `bn1.gamma` / `bn1.beta`           | `bn1.weight` / `bn1.bias`          | Burn's BN names         |
//! | `bn1.running_mean` / `running_var` | same                               | no `num_batches_tracked`|
//! | `layer{1-4}.{i}.conv{1-3}.weight`  | same                               | `conv3` in bottlenecks  |
//! | `layer{1-4}.{i}.bn{1-3}.gamma/beta`| `….bn{1-3}.weight/bias`            |                         |
//! | `layer{1-4}.{i}.downsample.0.weight` | same                             | 1×1 conv, tuple field 0 |
//! | `layer{1-4}.{i}.downsample.1.gamma/beta` | `….downsample.1.weight/bias` | BN, tuple field 1       |
//! | `fc.weight`                        | `fc.weight`                        | **transposed**: Burn `[in, out]` |
//! | `fc.bias`                          | `fc.bias`                          |                         |
//!
//! `downsample` is an `Option<(Conv2d, BatchNorm)>`: Burn names tuple members by index, so the
//! path is exactly torchvision's `nn.Sequential` indices `downsample.0` / `downsample.1`.
//!
//! Initialisation as torchvision: convolution weights kaiming-normal (fan_out, gain √2 for
//! ReLU), no convolution bias, batch-norm γ = 1 and β = 0 (the last BN of a block is *not*
//! zero-initialised, torchvision's default `zero_init_residual=False`), `fc` as PyTorch's
//! `nn.Linear` default (uniform ±1/√fan_in for weight and bias, which Burn's default matches).
//!
//! Batch norm trains or evaluates depending on the backend, not on a flag: on an autodiff
//! backend it uses batch statistics and updates the running ones; call `model.valid()` (the
//! inner backend) to evaluate with running statistics.

use crate::batch_norm::BatchNorm;
use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::Tensor;
use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;

use crate::error::UnknownModel;

/// Which residual block a ResNet is built from.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Two 3×3 convolutions, expansion 1 (ResNet-18/34; torchvision `BasicBlock`).
    Basic,
    /// 1×1 → 3×3 (strided, v1.5) → 1×1 convolutions, expansion 4 (ResNet-50/101/152;
    /// torchvision `Bottleneck`).
    Bottleneck,
}

impl BlockKind {
    /// Ratio of a block's output channels to its `planes` (torchvision `block.expansion`).
    pub fn expansion(self) -> usize {
        match self {
            BlockKind::Basic => 1,
            BlockKind::Bottleneck => 4,
        }
    }
}

/// Configuration of a [`ResNet`]. The defaults reproduce torchvision's models exactly.
#[derive(Config, Debug)]
pub struct ResNetConfig {
    /// Residual block type.
    pub block: BlockKind,
    /// Number of blocks in `layer1` … `layer4`.
    pub layers: [usize; 4],
    /// Number of output classes (`fc` output features).
    pub num_classes: usize,
    /// Input image channels: 3 for RGB, 1 for grey images.
    #[config(default = 3)]
    pub in_channels: usize,
    /// Width `w` of the network: the stem has `w` channels and the four stages have `planes`
    /// `w, 2w, 4w, 8w` (output channels times the block expansion). Default 64 as torchvision.
    /// This scales the whole network; it is not torchvision's `width_per_group`, which widens
    /// only the bottleneck's inner convolutions.
    #[config(default = 64)]
    pub base_width: usize,
    /// CIFAR-style stem from the ResNet paper (§4.2) for 28–32 px images: `conv1` is a 3×3
    /// stride-1 convolution and there is no max-pool. Default: torchvision's 7×7 stride-2
    /// convolution followed by a 3×3 stride-2 max-pool.
    #[config(default = false)]
    pub small_input_stem: bool,
}

impl ResNetConfig {
    /// Model names accepted by [`ResNetConfig::from_name`].
    pub const NAMES: &'static [&'static str] =
        &["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"];

    /// ResNet-18: basic blocks `[2, 2, 2, 2]`, 11,689,512 parameters at 1000 classes.
    pub fn resnet18(num_classes: usize) -> Self {
        Self::new(BlockKind::Basic, [2, 2, 2, 2], num_classes)
    }

    /// ResNet-34: basic blocks `[3, 4, 6, 3]`, 21,797,672 parameters at 1000 classes.
    pub fn resnet34(num_classes: usize) -> Self {
        Self::new(BlockKind::Basic, [3, 4, 6, 3], num_classes)
    }

    /// ResNet-50: bottlenecks `[3, 4, 6, 3]`, 25,557,032 parameters at 1000 classes.
    pub fn resnet50(num_classes: usize) -> Self {
        Self::new(BlockKind::Bottleneck, [3, 4, 6, 3], num_classes)
    }

    /// ResNet-101: bottlenecks `[3, 4, 23, 3]`, 44,549,160 parameters at 1000 classes.
    pub fn resnet101(num_classes: usize) -> Self {
        Self::new(BlockKind::Bottleneck, [3, 4, 23, 3], num_classes)
    }

    /// ResNet-152: bottlenecks `[3, 8, 36, 3]`, 60,192,808 parameters at 1000 classes.
    pub fn resnet152(num_classes: usize) -> Self {
        Self::new(BlockKind::Bottleneck, [3, 8, 36, 3], num_classes)
    }

    /// The configuration of a model named as torchvision names it (`"resnet50"`), see
    /// [`ResNetConfig::NAMES`].
    pub fn from_name(name: &str, num_classes: usize) -> Result<Self, UnknownModel> {
        match name {
            "resnet18" => Ok(Self::resnet18(num_classes)),
            "resnet34" => Ok(Self::resnet34(num_classes)),
            "resnet50" => Ok(Self::resnet50(num_classes)),
            "resnet101" => Ok(Self::resnet101(num_classes)),
            "resnet152" => Ok(Self::resnet152(num_classes)),
            _ => Err(UnknownModel {
                name: name.to_string(),
                valid: Self::NAMES,
            }),
        }
    }

    /// Number of features entering `fc`: `8 · base_width · expansion` (512 or 2048 by default).
    pub fn num_features(&self) -> usize {
        8 * self.base_width * self.block.expansion()
    }

    /// Builds the model with torchvision's initialisation (see the module documentation).
    pub fn init<B: Backend>(&self, device: &B::Device) -> ResNet<B> {
        let width = self.base_width;
        let (conv1, maxpool) = if self.small_input_stem {
            (conv(self.in_channels, width, 3, 1, device), None)
        } else {
            let pool = MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init();
            (conv(self.in_channels, width, 7, 2, device), Some(pool))
        };

        // torchvision `_make_layer`: `inplanes` carries the channel count from stage to stage.
        let mut in_planes = width;
        let mut make_layer = |stage: usize, stride: usize| {
            let planes = width << stage;
            let out_planes = planes * self.block.expansion();
            (0..self.layers[stage])
                .map(|i| {
                    let stride = if i == 0 { stride } else { 1 };
                    let block = Block::new(self.block, in_planes, planes, stride, device);
                    in_planes = out_planes;
                    block
                })
                .collect::<Vec<_>>()
        };
        let layer1 = make_layer(0, 1);
        let layer2 = make_layer(1, 2);
        let layer3 = make_layer(2, 2);
        let layer4 = make_layer(3, 2);

        ResNet {
            conv1,
            bn1: BatchNorm::new(width, device),
            maxpool,
            layer1,
            layer2,
            layer3,
            layer4,
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: LinearConfig::new(self.num_features(), self.num_classes).init(device),
        }
    }
}

/// A ResNet (v1.5), fields named as torchvision's `ResNet`.
#[derive(Module, Debug)]
pub struct ResNet<B: Backend> {
    /// Stem convolution: 7×7 stride 2 padding 3, or 3×3 stride 1 padding 1 with the small stem.
    pub conv1: Conv2d<B>,
    /// Stem batch norm.
    pub bn1: BatchNorm<B>,
    /// 3×3 stride-2 padding-1 max-pool; `None` with the small stem.
    pub maxpool: Option<MaxPool2d>,
    /// Stage 1, stride 1, `planes = w`.
    pub layer1: Vec<Block<B>>,
    /// Stage 2, first block stride 2, `planes = 2w`.
    pub layer2: Vec<Block<B>>,
    /// Stage 3, first block stride 2, `planes = 4w`.
    pub layer3: Vec<Block<B>>,
    /// Stage 4, first block stride 2, `planes = 8w`.
    pub layer4: Vec<Block<B>>,
    /// Global average pool to 1×1.
    pub avgpool: AdaptiveAvgPool2d,
    /// Classifier; weight stored `[num_features, num_classes]` (torchvision's transposed).
    pub fc: Linear<B>,
}

impl<B: Backend> ResNet<B> {
    /// x: `[batch, in_channels, height, width]` → logits `[batch, num_classes]`.
    ///
    /// Equal to `head(blocks().fold(stem(x), |x, b| b.forward(x)))`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let x = self.stem(x);
        let x = self.blocks().fold(x, |x, block| block.forward(x));
        self.head(x)
    }

    /// conv1 → bn1 → relu → maxpool.
    ///
    /// x: `[batch, in_channels, h, w]` → `[batch, base_width, h/4, w/4]`
    /// (`[batch, base_width, h, w]` with the small stem; sizes rounded as the convolutions do).
    pub fn stem(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = self.bn1.forward_relu(self.conv1.forward(x));
        match &self.maxpool {
            Some(pool) => pool.forward(x),
            None => x,
        }
    }

    /// Every residual block in execution order: `layer1[0]`, …, `layer4[last]`.
    ///
    /// The unit for gradient checkpointing: each block maps `[batch, c, h, w]` →
    /// `[batch, c', h/s, w/s]` and depends only on its input.
    pub fn blocks(&self) -> impl Iterator<Item = &Block<B>> {
        self.layer1
            .iter()
            .chain(&self.layer2)
            .chain(&self.layer3)
            .chain(&self.layer4)
    }

    /// The four stages `[layer1, layer2, layer3, layer4]`.
    pub fn layers(&self) -> [&[Block<B>]; 4] {
        [&self.layer1, &self.layer2, &self.layer3, &self.layer4]
    }

    /// avgpool → flatten → fc.
    ///
    /// x: `[batch, num_features, h, w]` → logits `[batch, num_classes]`.
    pub fn head(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let x: Tensor<B, 2> = self.avgpool.forward(x).flatten(1, 3);
        self.fc.forward(x)
    }
}

/// A residual block, fields named as torchvision's `BasicBlock` and `Bottleneck`.
///
/// One type serves both kinds so that a stage is a plain `Vec<Block>` whose paths carry no
/// variant name (a Burn enum module would insert one): a basic block has `conv3 = bn3 = None`.
///
/// Basic:      `relu(bn2(conv2(relu(bn1(conv1(x))))) + identity)`, conv1 3×3 stride s, conv2 3×3.
/// Bottleneck: `relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))) + identity)`,
/// conv1 1×1, conv2 3×3 stride s (v1.5), conv3 1×1 to `4 · planes` channels.
/// `identity` is `x`, or `downsample(x)` when the stride or the channel count changes.
#[derive(Module, Debug)]
pub struct Block<B: Backend> {
    /// Basic: 3×3 stride s, `in → planes`. Bottleneck: 1×1, `in → planes`.
    pub conv1: Conv2d<B>,
    /// Batch norm after `conv1`.
    pub bn1: BatchNorm<B>,
    /// Basic: 3×3, `planes → planes`. Bottleneck: 3×3 stride s, `planes → planes`.
    pub conv2: Conv2d<B>,
    /// Batch norm after `conv2`.
    pub bn2: BatchNorm<B>,
    /// Bottleneck only: 1×1, `planes → 4 · planes`.
    pub conv3: Option<Conv2d<B>>,
    /// Bottleneck only: batch norm after `conv3`.
    pub bn3: Option<BatchNorm<B>>,
    /// Projection shortcut: `.0` = 1×1 stride-s conv (torchvision `downsample.0`),
    /// `.1` = batch norm (torchvision `downsample.1`). Present when the block changes the
    /// stride or the channel count.
    pub downsample: Option<(Conv2d<B>, BatchNorm<B>)>,
}

impl<B: Backend> Block<B> {
    /// A block as torchvision's `_make_layer` builds it: `in_planes` input channels,
    /// `planes · kind.expansion()` output channels, spatial stride `stride`.
    pub fn new(
        kind: BlockKind,
        in_planes: usize,
        planes: usize,
        stride: usize,
        device: &B::Device,
    ) -> Self {
        let out_planes = planes * kind.expansion();
        let downsample = (stride != 1 || in_planes != out_planes).then(|| {
            let conv = conv(in_planes, out_planes, 1, stride, device);
            (conv, BatchNorm::new(out_planes, device))
        });
        let bn = |channels| BatchNorm::new(channels, device);
        match kind {
            BlockKind::Basic => Block {
                conv1: conv(in_planes, planes, 3, stride, device),
                bn1: bn(planes),
                conv2: conv(planes, planes, 3, 1, device),
                bn2: bn(planes),
                conv3: None,
                bn3: None,
                downsample,
            },
            BlockKind::Bottleneck => Block {
                conv1: conv(in_planes, planes, 1, 1, device),
                bn1: bn(planes),
                conv2: conv(planes, planes, 3, stride, device),
                bn2: bn(planes),
                conv3: Some(conv(planes, out_planes, 1, 1, device)),
                bn3: Some(bn(out_planes)),
                downsample,
            },
        }
    }

    /// True for a bottleneck block (it has `conv3`).
    pub fn is_bottleneck(&self) -> bool {
        self.conv3.is_some()
    }

    /// x: `[batch, in_planes, h, w]` → `[batch, out_planes, h/s, w/s]` (`⌈h/s⌉` for odd h).
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let identity = match &self.downsample {
            Some((conv, bn)) => bn.forward(conv.forward(x.clone())),
            None => x.clone(),
        };
        let out = self.bn1.forward_relu(self.conv1.forward(x));
        let out = match (&self.conv3, &self.bn3) {
            (Some(conv3), Some(bn3)) => {
                bn3.forward(conv3.forward(self.bn2.forward_relu(self.conv2.forward(out))))
            }
            _ => self.bn2.forward(self.conv2.forward(out)),
        };
        relu(out + identity)
    }
}

/// A bias-free `kernel × kernel` convolution with padding `kernel / 2` (torchvision's
/// `conv3x3`, `conv1x1` and the 7×7 stem), kaiming-normal weights with fan_out and ReLU gain
/// (`nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")`: std = √2 / √fan_out).
fn conv<B: Backend>(
    in_channels: usize,
    out_channels: usize,
    kernel: usize,
    stride: usize,
    device: &B::Device,
) -> Conv2d<B> {
    let pad = kernel / 2;
    Conv2dConfig::new([in_channels, out_channels], [kernel, kernel])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
        .with_bias(false)
        .with_initializer(Initializer::KaimingNormal {
            gain: std::f64::consts::SQRT_2,
            fan_out_only: true,
        })
        .init(device)
}
