//! Mixed precision (PyTorch AMP, as TorchAcc offers it), for any model written against Burn.
//!
//! - [`policy`]: which ops run in half precision and which in f32 under autocast; `Acc<B>`
//!   applies it to every op (the tables are read by `scripts/gen_forwarding.py`).
//! - [`scaler`]: dynamic loss scaling with PyTorch's `GradScaler` semantics.
//! - [`optim`]: SGD, Adam and AdamW whose step takes the found-inf flag as a device tensor and
//!   skips the update on the device, so a training step never reads back from the device.

pub mod optim;
pub mod policy;
pub mod scaler;
