use std::path::PathBuf;

/// Why a recipe cannot be used. Every message names the file and, where there is one, the key.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// The file could not be read.
    #[error("cannot read recipe {}: {source}", file.display())]
    Read {
        /// The recipe file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{}: not valid TOML: {message}", file.display())]
    Syntax {
        /// The recipe file.
        file: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A key is unknown, has the wrong type, or holds an impossible value.
    #[error("{}: key `{key}`: {message}", file.display())]
    Key {
        /// The recipe file.
        file: PathBuf,
        /// Dotted path of the key, e.g. `train.batch_size`.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// A `--set key=value` argument is malformed.
    #[error("--set {arg}: {message} (recipe {})", file.display())]
    Set {
        /// The recipe file the override applies to.
        file: PathBuf,
        /// The argument as given.
        arg: String,
        /// What is wrong with it.
        message: String,
    },
}
