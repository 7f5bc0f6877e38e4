//! Hand-written ops of `Acc<B>` (named in `OVERRIDES` of scripts/gen_forwarding.py): same
//! signature as the op they replace, called by the generated forwarding after autocast.

mod layer_norm;
mod linear;
mod softmax;

pub use layer_norm::layer_norm;
pub use linear::linear;
pub use softmax::softmax;
