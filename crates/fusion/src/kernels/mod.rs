//! burnacc's CPU kernels over Flex's buffers.

pub mod batch_norm;
pub mod bias_dropout_add;
pub mod binary;
pub mod contiguous;
pub mod conv_backward;
pub mod gelu;
pub mod layer_norm;
pub mod matmul;
pub mod rows;
pub mod softmax;
pub mod strided;
