//! Recipes: the TOML files in `configs/` that say what to train and how.
//!
//! Every key has its default here, in one place. Unknown keys, wrong types and impossible values
//! are errors that name the key and the file ([`RecipeError`]), raised before any work starts.

mod amp;
mod byte_size;
mod device;
mod error;
mod load;
mod schema;
mod swin;
mod text_paths;
mod validate;

pub use amp::{AmpDtype, AmpLevel, AmpSection};
pub use byte_size::parse_byte_size;
pub use device::{DeviceSpec, Mode};
pub use error::RecipeError;
pub use load::{apply_set, load_recipe, parse_recipe};
pub use schema::*;
pub use swin::swin_config;
pub use text_paths::TextPaths;
