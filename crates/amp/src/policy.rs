//! The autocast policy: PyTorch's op lists, mapped onto Burn 0.21's backend ops.
//!
//! Under autocast (`burnacc_backend::autocast`), `Acc<B>` casts the float inputs of each op:
//!
//! - ops in [`LOWER_PRECISION_OPS`] run in the autocast dtype (f16 or bf16): every path to a
//!   matmul or a convolution, forward and backward (PyTorch's "lower_precision_fp" list);
//! - ops in [`FLOAT32_OPS`] run in f32 (PyTorch's "fp32" list): reductions, exp/log/pow,
//!   softmax, layer norm, losses;
//! - every other op with two or more float inputs runs in the widest of their dtypes ("promote");
//! - every other op runs in its input's dtype.
//!
//! Only f32, f16 and bf16 inputs are cast (f64 is left alone, as in PyTorch). Burn's ops do not
//! promote by themselves, so these rules also guarantee that every op `Acc` emits has inputs of
//! one dtype. Ops not in the tables but made of others (batch norm's statistics are
//! `float_mean_dim`, cross-entropy is `log_softmax`) follow from their parts.
//!
//! The names are Burn 0.21's op method names; `scripts/gen_forwarding.py` reads these two
//! lists (string literals between `[` and `]`) to generate the casts, and a test checks that
//! every name is an op of the backend.

/// How autocast treats an op's float inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastPolicy {
    /// Cast f32/f16/bf16 inputs to the autocast dtype.
    LowerPrecision,
    /// Cast f16/bf16 inputs to f32.
    Float32,
    /// Cast inputs to the widest input dtype (f16 with bf16 gives f32).
    Promote,
    /// Leave the inputs alone.
    Keep,
}

/// Ops computed in the autocast dtype: matmul, linear, convolutions, attention, and their
/// input- and weight-gradient ops.
pub const LOWER_PRECISION_OPS: &[&str] = &[
    "float_matmul",
    "linear",
    "linear_x_backward",
    "linear_weight_backward",
    "conv1d",
    "conv1d_x_backward",
    "conv1d_weight_backward",
    "conv2d",
    "conv2d_x_backward",
    "conv2d_weight_backward",
    "conv3d",
    "conv3d_x_backward",
    "conv3d_weight_backward",
    "conv_transpose1d",
    "conv_transpose1d_x_backward",
    "conv_transpose1d_weight_backward",
    "conv_transpose2d",
    "conv_transpose2d_x_backward",
    "conv_transpose2d_weight_backward",
    "conv_transpose3d",
    "conv_transpose3d_x_backward",
    "conv_transpose3d_weight_backward",
    "deform_conv2d",
    "deform_conv2d_backward",
    "attention",
];

/// Ops computed in f32: sums and means (bias gradients are sums too), products, cumulative
/// sums, exp/log/pow and the trigonometric functions PyTorch lists, softmax-family
/// activations, layer norm and the CTC loss.
pub const FLOAT32_OPS: &[&str] = &[
    "float_sum",
    "float_sum_dim",
    "float_mean",
    "float_mean_dim",
    "float_prod",
    "float_prod_dim",
    "float_cumsum",
    "float_cumprod",
    "float_exp",
    "float_log",
    "float_log1p",
    "float_powf",
    "float_powi",
    "float_powi_scalar",
    "float_powi_scalar_impl",
    "float_powf_scalar",
    "float_powf_scalar_impl",
    "float_recip",
    "float_tan",
    "float_cosh",
    "float_sinh",
    "float_acos",
    "float_asin",
    "softmax",
    "log_softmax",
    "softmin",
    "layer_norm",
    "ctc_loss",
    "linear_bias_backward",
    "conv1d_bias_backward",
    "conv2d_bias_backward",
    "conv3d_bias_backward",
    "conv_transpose1d_bias_backward",
    "conv_transpose2d_bias_backward",
    "conv_transpose3d_bias_backward",
];

/// The policy of op `name` given its number of float inputs (tensors and optional tensors count
/// as one each, a tensor list as two: it may hold several dtypes).
pub fn cast_policy(name: &str, float_inputs: usize) -> CastPolicy {
    if LOWER_PRECISION_OPS.contains(&name) {
        CastPolicy::LowerPrecision
    } else if FLOAT32_OPS.contains(&name) {
        CastPolicy::Float32
    } else if float_inputs >= 2 {
        CastPolicy::Promote
    } else {
        CastPolicy::Keep
    }
}
