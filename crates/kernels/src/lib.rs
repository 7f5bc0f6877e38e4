//! Fused CubeCL kernels for burnacc, each with a plain-Burn reference it is tested against.
//!
//! - [`batch_norm`]: batch norm in training mode (with an optional fused ReLU), forward and
//!   backward, three kernels each way: per-channel f32 sums over runs of the channel, then the
//!   statistics or parameter gradients, then the element-wise pass.
//! - [`layer_norm`]: LayerNorm over the last dimension, forward and backward, as one kernel per
//!   row (plus a two-stage column reduction for the parameter gradients).
//! - [`bias_dropout_add`]: `residual + dropout(x + bias)`, one pass each way, mask from a seed.
//! - [`gelu`]: QuickGELU and bias + exact GELU, forward and backward, one pass each.
//! - [`optim`]: multi-tensor Adam/AdamW and SGD steps, one pass per element over many tensors.
//! - [`window_process`]: Swin's cyclic shift + pad + window partition (and its reverse), one
//!   gather each way.
//! - [`softmax`]: softmax as one autodiff node whose backward is one pass (the window-softmax
//!   backward of `swin_attention` for the last dimension).
//! - [`swin_attention`]: Swin's relative-position-bias + mask + softmax, one pass each way.
//! - [`nms`]: the NMS family of detection models (torchvision's `nms`/`batched_nms`, mmcv's
//!   legacy-pixel NMS and soft-NMS): the IoU bitmask and the soft-NMS loop on CubeCL devices,
//!   the host elsewhere.
//! - [`dcn`]: deformable convolution v1 and v2 (torchvision's `deform_conv2d` with argument
//!   checks; mmcv's `DeformConv2dPack` and `ModulatedDeformConv2dPack` layers).
//! - [`sum_axes`]: a sum or mean over several axes at once, one cube per output element (the
//!   kernel of burnacc's CubeCL fuser of `sum_dim` chains).
//! - [`multi_apply`]: mmdet's `multi_apply` and TorchAcc's multi-stream variant (a stream per
//!   group, results in order).

pub mod batch_norm;
pub mod bias_dropout_add;
mod cube_tree;
mod cube_util;
mod custom_op;
pub mod dcn;
mod fallback;
pub mod gelu;
mod launch_counter;
pub mod layer_norm;
pub mod multi_apply;
pub mod nms;
pub mod optim;
pub mod softmax;
pub mod sum_axes;
pub mod swin_attention;
pub mod window_process;
