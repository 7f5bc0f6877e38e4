//! `CpuFlex`'s own ops: burnacc's kernel where it is faster than Flex's, Flex's otherwise.
//! Each kernel run bumps its counter (`crate::counters`).

mod activation;
mod binary;
mod conv;
mod linear;
mod matmul;
mod random;
mod reshape;
mod scalar;
mod zeros;

pub use activation::{gelu, gelu_backward};
pub use binary::{float_add, float_div, float_mul, float_sub};
pub use conv::{conv2d_weight_backward, conv2d_x_backward};
pub use linear::{linear_bias_backward, linear_weight_backward};
pub use matmul::float_matmul;
pub use random::float_random;
pub use reshape::{float_reshape, view_strides};
pub use scalar::{float_add_scalar, float_div_scalar, float_mul_scalar, float_sub_scalar};
pub use zeros::{float_empty, float_zeros};
