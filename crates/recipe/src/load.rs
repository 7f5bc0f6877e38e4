//! Reading a recipe file, applying `--set key=value` overrides, and checking it.

use super::validate::{check_paths, validate};
use super::{Recipe, RecipeError};
use std::path::Path;

/// Reads, overrides and checks the recipe at `file`.
///
/// `sets` are `key=value` strings (`train.max_steps=5`, `backend.device=cpu`); a value is read
/// as TOML (`5`, `true`, `"text"`, `[1, 2]`) and, failing that, as a bare string. Every error
/// names the file and the key.
pub fn load_recipe(file: &Path, sets: &[String]) -> Result<Recipe, RecipeError> {
    let text = std::fs::read_to_string(file).map_err(|source| RecipeError::Read {
        file: file.to_owned(),
        source,
    })?;
    let recipe = parse_recipe(&text, file, sets)?;
    check_paths(&recipe).map_err(|(key, message)| RecipeError::Key {
        file: file.to_owned(),
        key: key.to_owned(),
        message,
    })?;
    Ok(recipe)
}

/// Like [`load_recipe`], from the recipe's text, without looking at the file system (dataset
/// paths are not checked); `file` is used in messages only.
pub fn parse_recipe(text: &str, file: &Path, sets: &[String]) -> Result<Recipe, RecipeError> {
    let mut table: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| RecipeError::Syntax {
                file: file.to_owned(),
                message: e.to_string().trim_end().to_owned(),
            })?;
    for arg in sets {
        apply_set(&mut table, arg).map_err(|message| RecipeError::Set {
            file: file.to_owned(),
            arg: arg.clone(),
            message,
        })?;
    }
    let kernels_given: Vec<String> = match table.get("kernels") {
        Some(toml::Value::Table(kernels)) => kernels.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let mut recipe: Recipe =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            // The deserializer appends "in `section`" on later lines: the key already says it.
            let message = e
                .inner()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            // `[model]` reads its keys itself and names the key in its message.
            let (key, message) = match message
                .strip_prefix("key `")
                .and_then(|rest| rest.split_once("`: "))
            {
                Some((key, rest)) => (key.to_owned(), rest.to_owned()),
                None => (key_of(&e.path().to_string(), &message), message),
            };
            RecipeError::Key {
                file: file.to_owned(),
                key,
                message,
            }
        })?;
    recipe
        .kernels
        .apply_mode_defaults(recipe.backend.mode, recipe.optim.name, &kernels_given);
    validate(&recipe).map_err(|(key, message)| RecipeError::Key {
        file: file.to_owned(),
        key: key.to_owned(),
        message,
    })?;
    Ok(recipe)
}

/// The recipe as TOML that [`parse_recipe`] reads back to the same recipe. Keys mode acc
/// switched on by default are left out, so that they are defaults again when it is read (and
/// not reported as switched on for a model that never calls their kernel).
pub fn recipe_toml(recipe: &Recipe) -> String {
    let mut table = toml::Table::try_from(recipe).expect("a recipe serialises to TOML");
    if let Some(toml::Value::Table(kernels)) = table.get_mut("kernels") {
        for key in &recipe.kernels.by_default {
            kernels.remove(key.trim_start_matches("kernels."));
        }
    }
    toml::to_string(&table).expect("a TOML table serialises")
}

/// The dotted key an error is about: serde's path (which ends with the field name for an unknown
/// field), or the field name itself for an unknown top-level section.
fn key_of(path: &str, message: &str) -> String {
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next());
    match (path, unknown) {
        (".", Some(field)) => field.to_owned(),
        (path, _) => path.to_owned(),
    }
}

/// Sets `key=value` in a parsed recipe table, creating sections as needed.
pub fn apply_set(table: &mut toml::Table, arg: &str) -> Result<(), String> {
    let (key, raw) = arg
        .split_once('=')
        .ok_or_else(|| "expected key=value, e.g. train.max_steps=5".to_owned())?;
    let parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("`{key}` is not a dotted key like train.max_steps"));
    }
    let value = parse_value(raw.trim());
    let (last, sections) = parts.split_last().expect("split yields at least one part");
    let mut current = table;
    for (depth, part) in sections.iter().enumerate() {
        let entry = current
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{}` is a value, not a section", parts[..=depth].join(".")))?;
    }
    current.insert(last.to_string(), value);
    Ok(())
}

fn parse_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
}
