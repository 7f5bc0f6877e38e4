//! burnacc's CPU kernels over Flex's buffers.

pub mod binary;
pub mod conv_backward;
pub mod strided;
