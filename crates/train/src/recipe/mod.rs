//! Recipes as the trainer reads them: `burnacc_recipe`'s schema and checks, plus the checks
//! that need the models (a Swin Transformer's sizes must fit its image), made before any work
//! starts.

mod swin;

pub use burnacc_recipe::*;
pub use swin::swin_config;

use std::path::Path;

/// Reads, overrides and checks the recipe at `file` ([`burnacc_recipe::load_recipe`]), then
/// checks that the model it describes can be built.
pub fn load_recipe(file: &Path, sets: &[String]) -> Result<Recipe, RecipeError> {
    let recipe = burnacc_recipe::load_recipe(file, sets)?;
    check_model(&recipe, file)?;
    Ok(recipe)
}

/// Like [`load_recipe`], from the recipe's text, without looking at the file system; `file`
/// is used in messages only.
pub fn parse_recipe(text: &str, file: &Path, sets: &[String]) -> Result<Recipe, RecipeError> {
    let recipe = burnacc_recipe::parse_recipe(text, file, sets)?;
    check_model(&recipe, file)?;
    Ok(recipe)
}

/// The model-specific checks, as a [`RecipeError`] naming the key and the file.
fn check_model(recipe: &Recipe, file: &Path) -> Result<(), RecipeError> {
    swin::check_swin(recipe).map_err(|(key, message)| RecipeError::Key {
        file: file.to_owned(),
        key: key.to_owned(),
        message,
    })
}
