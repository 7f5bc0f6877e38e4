//! Recipes: the TOML files in `configs/` that say what to train and how.
//!
//! Every key has its default here, in one place. Unknown keys, wrong types and impossible values
//! are errors that name the key and the file ([`RecipeError`]), raised before any work starts.
//!
//! This crate knows serde and TOML, not Burn: what a recipe *means* on a device (the backend
//! stack, the model built from `[model]`) is the trainer's business. Its tests (tier 1) build in
//! seconds.

mod amp;
mod byte_size;
mod device;
mod error;
mod load;
mod model;
mod resume_keys;
mod schedule;
mod schema;
mod text_paths;
mod validate;

pub use amp::{AmpDtype, AmpLevel, AmpSection};
pub use byte_size::parse_byte_size;
pub use device::{DeviceSpec, Mode};
pub use error::RecipeError;
pub use load::{apply_set, load_recipe, parse_recipe, recipe_toml};
pub use model::{
    BertKeys, FamilyKeys, HiddenActName, ModelFamilyName, ModelName, ModelSection, ResNetKeys,
    SwinKeys,
};
pub use resume_keys::{KeyChange, training_key_changes};
pub use schedule::learning_rate;
pub use schema::*;
pub use text_paths::TextPaths;
