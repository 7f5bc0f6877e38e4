//! burnacc's trainer: recipes, backend stacks, the training loop, logs and run folders.
//!
//! The `train` binary is a thin shell over [`trainer::run_recipe`].

pub mod curves;
pub mod kernel_cache;
pub mod launch;
pub mod log;
pub mod memory;
pub mod png;
pub mod precision;
pub mod profile;
pub mod progress;
pub mod recipe;
pub mod resume;
pub mod run_dir;
pub mod stack;
pub mod trainer;
