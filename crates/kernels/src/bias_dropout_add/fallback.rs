//! Plumbing of the reference (default) path of [`super::BiasDropoutAddKernel`] beyond the
//! crate's shared one (`crate::fallback`): the seed tensor read back to the host.

use burn::tensor::backend::Backend;
use burn::tensor::ops::IntTensor;
use burn::tensor::{Int, Tensor};

use super::seed::DropoutSeed;

/// The host value of the seed tensor, for the host mask. Reads it back (a synchronisation):
/// only the CPU backends take the reference path, where that costs nothing. At `p = 0` nothing
/// is read (there is no mask) and the seed may be absent; without one at `p > 0`, panics.
pub fn read_seed<B: Backend>(seed: Option<IntTensor<B>>, p: f64) -> DropoutSeed {
    if p == 0.0 {
        return DropoutSeed::default();
    }
    let seed = seed
        .unwrap_or_else(|| panic!("bias_dropout_add: dropout with p = {p} needs a seed tensor"));
    DropoutSeed::from_tensor(Tensor::<B, 1, Int>::from_primitive(seed))
}
