//! Counters that prove which of burnacc's CPU kernels and fused optimizations, and of its CubeCL
//! fusers' optimizations, ran.
//!
//! Process-wide (the fusion stream may execute on any thread); tests compare readings taken
//! before and after the work they check.

use std::sync::atomic::{AtomicU64, Ordering};

/// One counter.
pub struct Counter {
    name: &'static str,
    value: AtomicU64,
}

impl Counter {
    const fn new(name: &'static str) -> Self {
        Self {
            name,
            value: AtomicU64::new(0),
        }
    }

    /// Adds one.
    pub fn bump(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::Relaxed);
    }

    /// Calls so far.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }

    /// The counter's name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// Fused element-wise chains run as one pass (`cpu::elementwise`).
pub static ELEMENTWISE_FUSED: Counter = Counter::new("cpu_elementwise_fused");
/// Ops run inside fused element-wise chains.
pub static ELEMENTWISE_FUSED_OPS: Counter = Counter::new("cpu_elementwise_fused_ops");
/// Strided f32 views copied to row-major buffers by rows of contiguous runs
/// (`kernels::contiguous`) instead of Flex's per-element copy.
pub static STRIDED_COPY: Counter = Counter::new("cpu_strided_copy");
/// Element-wise binary ops (add, sub, mul, div) with broadcast or strided f32 inputs, run by
/// burnacc's strided kernel instead of Flex's per-element index iterator.
pub static BROADCAST_BINARY: Counter = Counter::new("cpu_broadcast_binary");
/// Convolution input gradients computed as one matrix product + col2im.
pub static CONV2D_X_BACKWARD: Counter = Counter::new("cpu_conv2d_x_backward");
/// Convolution weight gradients computed as one matrix product over im2col columns.
pub static CONV2D_WEIGHT_BACKWARD: Counter = Counter::new("cpu_conv2d_weight_backward");
/// LayerNorm forwards (with their statistics) run as one pass per row.
pub static LAYER_NORM_FORWARD: Counter = Counter::new("cpu_layer_norm_forward");
/// LayerNorm backwards (dx, dgamma, dbeta) run as one pass per row.
pub static LAYER_NORM_BACKWARD: Counter = Counter::new("cpu_layer_norm_backward");
/// Batch-norm forwards (with their statistics and the ReLU after them) run as two passes.
pub static BATCH_NORM_FORWARD: Counter = Counter::new("cpu_batch_norm_forward");
/// Batch-norm backwards (dx, dgamma, dbeta) run as two passes.
pub static BATCH_NORM_BACKWARD: Counter = Counter::new("cpu_batch_norm_backward");
/// Bias + GELU and QuickGELU forwards run as one pass.
pub static GELU_FORWARD: Counter = Counter::new("cpu_gelu_forward");
/// Bias + GELU and QuickGELU backwards (with the bias gradient) run as one pass.
pub static GELU_BACKWARD: Counter = Counter::new("cpu_gelu_backward");
/// Bias + dropout + residual-add forwards run as one pass.
pub static BIAS_DROPOUT_ADD_FORWARD: Counter = Counter::new("cpu_bias_dropout_add_forward");
/// Bias + dropout + residual-add backwards run as one pass.
pub static BIAS_DROPOUT_ADD_BACKWARD: Counter = Counter::new("cpu_bias_dropout_add_backward");
/// Swin window-attention softmaxes (bias gathered, mask added) run as one pass.
pub static WINDOW_SOFTMAX_FORWARD: Counter = Counter::new("cpu_window_softmax_forward");
/// Softmax backwards run as one pass.
pub static WINDOW_SOFTMAX_BACKWARD: Counter = Counter::new("cpu_window_softmax_backward");
/// Batched matrix products against one shared matrix run as one product over the folded
/// batch (`[batch · M, K] × [K, N]`).
pub static MATMUL_FOLDED_BATCH: Counter = Counter::new("cpu_matmul_folded_batch");
/// f32 matrix products written by burnacc's GEMM call (no zero-filled, copied output buffer).
pub static MATMUL_F32: Counter = Counter::new("cpu_matmul_f32");
/// f32 scalar ops (add, sub, mul, div) on strided views run by the strided binary kernel.
pub static STRIDED_SCALAR: Counter = Counter::new("cpu_strided_scalar");
/// Reshapes of tensors that are not contiguous from offset 0 done as views instead of copies.
pub static RESHAPE_VIEW: Counter = Counter::new("cpu_reshape_view");
/// Linear weight gradients run as one product over every position (not one per batch
/// matrix and a sum).
pub static LINEAR_WEIGHT_GRAD: Counter = Counter::new("cpu_linear_weight_grad");
/// f32 Bernoulli tensors (dropout and drop-path masks) drawn with burnacc's counter-based hash.
pub static BERNOULLI_F32: Counter = Counter::new("cpu_bernoulli_f32");
/// Chains of `sum_dim` / `mean_dim` run as one multi-axis reduction (or none) by
/// `Fusion<CubeAcc<R>>` (`cube::sum_chain`).
pub static CUBE_SUM_CHAIN: Counter = Counter::new("cube_sum_chain");
/// Reductions run inside those chains.
pub static CUBE_SUM_CHAIN_OPS: Counter = Counter::new("cube_sum_chain_ops");
/// Those chains led by a `swap_dims` / `reshape` view, read in place (a batch norm's statistics).
pub static CUBE_SUM_CHAIN_VIEWS: Counter = Counter::new("cube_sum_chain_views");
/// Chains whose real shapes ruled out one reduction, run op by op as Burn would.
pub static CUBE_SUM_CHAIN_UNFUSED: Counter = Counter::new("cube_sum_chain_unfused");
/// Module ops (convolutions, poolings) that led a block, run alone so that the ops behind them
/// are explored again by `Fusion<CubeAcc<R>>` (`cube::lone_op`).
pub static CUBE_MODULE_OP_ALONE: Counter = Counter::new("cube_module_op_alone");
/// Custom ops (burnacc's kernels) that led a block, run alone likewise (`cube::lone_op`).
pub static CUBE_CUSTOM_OP_ALONE: Counter = Counter::new("cube_custom_op_alone");
/// Burn's element-wise kernels run by `Fusion<CubeAcc<R>>` (`cube::stock`).
pub static CUBE_STOCK_ELEMENTWISE: Counter = Counter::new("cube_stock_elementwise");
/// Element-wise kernels of `Fusion<CubeAcc<R>>` that read through a reshape Burn's fuser
/// closes on, or took a reduction over an axis of size 1 (`cube::elementwise_views`).
pub static CUBE_ELEMENTWISE_VIEWS: Counter = Counter::new("cube_elementwise_views");
/// Reshapes run ahead of those kernels.
pub static CUBE_ELEMENTWISE_RESHAPES_AHEAD: Counter =
    Counter::new("cube_elementwise_reshapes_ahead");
/// Reductions over an axis of size 1 run as assignments in those kernels.
pub static CUBE_ELEMENTWISE_UNIT_REDUCTIONS: Counter =
    Counter::new("cube_elementwise_unit_reductions");
