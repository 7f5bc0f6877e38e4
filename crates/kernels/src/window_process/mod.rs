//! Swin's window processing fused into one CubeCL gather each way (TorchAcc's
//! `WindowProcess` / `WindowProcessReverse`):
//!
//! ```text
//! process:  x [batch, h, w, c] → roll by (−sh, −sw) → zero-pad to a multiple of the window
//!           → partition → windows [batch · nh · nw, wh · ww, c]
//! reverse:  windows → merge → crop to [h, w] → roll by (+sh, +sw) → [batch, h, w, c]
//! ```
//!
//! with `nh = ⌈h / wh⌉`, `nw = ⌈w / ww⌉`, windows in row-major order per image (images
//! outermost) and tokens in row-major order per window, exactly as timm's
//! `torch.roll` + `F.pad` + `window_partition` (and `window_reverse` + slice + `torch.roll`)
//! lay them out. Plain Burn does this with a `cat` per rolled dimension, a pad, and the
//! reshape/permute copies of the partition; here each direction is one pass that reads every
//! element once and writes it once.
//!
//! Every output element comes from exactly one input element (or is padding), so each
//! direction is the other's backward: the gradient of `process` is `reverse` of the upstream
//! gradient (padding's gradient is dropped) and vice versa. No state is saved.
//!
//! - [`reference`](mod@reference): the same maps as a `select` of rows by host-computed
//!   indices (ground truth of the tests, fallback path);
//! - `kernel`: the two `#[cube]` gathers; [`launch`]: their launchers on [`CubeTensor`];
//! - [`WindowProcessKernel`]: the backend extension, implemented for [`CubeBackend`] by the
//!   kernels, for the CPU backends by the reference, for `Autodiff<B>` (`autodiff`) as one graph
//!   node each way, and for `Fusion<B>` (`fusion`) as one custom operation;
//! - [`counters`]: launch counters that prove the fused path ran.

mod autodiff;
mod backends;
pub mod counters;
mod fusion;
mod geometry;
mod kernel;
pub mod launch;
pub mod reference;

pub use counters::{window_process_launches, window_process_reverse_launches};
pub use geometry::WindowGeometry;
pub use launch::{window_process_cube, window_process_reverse_cube};
pub use reference::{window_process_reference, window_process_reverse_reference};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorPrimitive};
#[cfg(doc)]
use burn_cubecl::{CubeBackend, tensor::CubeTensor};

/// A backend that can run Swin's shift + pad + window partition (and its reverse) as one
/// fused operation each.
///
/// The provided methods compute with the plain-Burn [`reference`](mod@reference), so any
/// backend can opt in with an empty `impl`; [`CubeBackend`] overrides them with the CubeCL
/// kernels. Values are moved, never computed with, so every dtype is exact.
pub trait WindowProcessKernel: Backend {
    /// `x: [batch, h, w, c]` → `[batch · nh · nw, wh · ww, c]` in the dtype of `x`, with
    /// `[h, w]`, the window and the shift taken from `geometry`.
    fn fused_window_process(x: FloatTensor<Self>, geometry: WindowGeometry) -> FloatTensor<Self> {
        window_process_reference(Tensor::<Self, 4>::from_primitive(float(x)), geometry)
            .into_primitive()
            .tensor()
    }

    /// `windows: [batch · nh · nw, wh · ww, c]` → `[batch, h, w, c]` in the dtype of
    /// `windows`: the inverse of [`Self::fused_window_process`] (padding dropped).
    fn fused_window_process_reverse(
        windows: FloatTensor<Self>,
        geometry: WindowGeometry,
    ) -> FloatTensor<Self> {
        window_process_reverse_reference(
            Tensor::<Self, 3>::from_primitive(float(windows)),
            geometry,
        )
        .into_primitive()
        .tensor()
    }
}

fn float<B: Backend>(primitive: FloatTensor<B>) -> TensorPrimitive<B> {
    TensorPrimitive::Float(primitive)
}

/// Swin's shifted-window partition of `x: [batch, h, w, c]` → `[batch · nh · nw, wh · ww, c]`
/// (see the [module docs](self)); differentiable on `Autodiff<B>` as one graph node.
pub fn window_process<B: WindowProcessKernel>(
    x: Tensor<B, 4>,
    geometry: WindowGeometry,
) -> Tensor<B, 3> {
    Tensor::from_primitive(float(B::fused_window_process(
        x.into_primitive().tensor(),
        geometry,
    )))
}

/// The inverse of [`window_process`]: `windows: [batch · nh · nw, wh · ww, c]` →
/// `[batch, h, w, c]`; differentiable on `Autodiff<B>` as one graph node.
pub fn window_process_reverse<B: WindowProcessKernel>(
    windows: Tensor<B, 3>,
    geometry: WindowGeometry,
) -> Tensor<B, 4> {
    Tensor::from_primitive(float(B::fused_window_process_reverse(
        windows.into_primitive().tensor(),
        geometry,
    )))
}
