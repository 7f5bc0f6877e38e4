//! A sum (or mean) over several axes at once, as one CubeCL kernel (two for long reductions):
//!
//! ```text
//! y[kept] = scale · Σ_{reduced axes} x[kept, reduced]
//! ```
//!
//! with the reduced axes kept as size 1 in `y` (Burn's `sum_dim` keeps them). Autodiff reduces
//! the gradient of every broadcast operand one axis at a time (`sum_dim(0)`, then `sum_dim(2)`,
//! then `sum_dim(3)` for a `[1, C, 1, 1]` batch-norm parameter), one kernel each; burnacc's
//! CubeCL fusion runtime runs such chains through this kernel instead.
//!
//! - `kernel`: the `#[cube]` kernels: one cube per output element, or, for long reductions, one
//!   cube per run of the reduced elements and a second kernel that adds the runs;
//! - [`launch`]: its launcher on Burn's CubeCL primitive, [`burn_cubecl::tensor::CubeTensor`];
//! - [`counters`]: the launch counter that proves it ran.
//!
//! Sums are accumulated in f32 whatever the storage dtype, and stored in the input's dtype.

pub mod counters;
mod kernel;
pub mod launch;

pub use counters::{sum_axes_launches, sum_axes_split_launches};
pub use launch::sum_axes_cube;
