//! Errors of the model crate.

/// A model was asked for by a name this crate does not know.
///
/// Recipes name their model (`"resnet50"`); the message lists every name that would have worked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown model `{name}`; valid names: {}", valid.join(", "))]
pub struct UnknownModel {
    /// The name that was asked for.
    pub name: String,
    /// The names of the family that was searched.
    pub valid: &'static [&'static str],
}
