//! `CpuFlex`'s own ops: burnacc's kernel where it is faster than Flex's, Flex's otherwise.
//! Each kernel run bumps its counter (`crate::counters`).

mod binary;
mod conv;

pub use binary::{float_add, float_div, float_mul, float_sub};
pub use conv::{conv2d_weight_backward, conv2d_x_backward};
