//! Which recipe keys a resumed run may change: those that do not change what is computed from
//! the checkpoint on (how long, how often to log and save, where to evaluate, which stack runs
//! it). Every other key must equal the checkpoint's, or the resumed run would not continue the
//! same training.

use super::Recipe;
use std::collections::BTreeMap;

/// Keys (or whole sections, ending in `.`) a resumed run may set freely.
const FREE_KEYS: &[&str] = &[
    "train.log_every",
    "train.save_every",
    "train.keep_last",
    "train.eval",
    "train.eval_every",
    "train.eval_batch_size",
    "train.eval_max_batches",
    "train.run_dir",
    "train.save_model",
    "train.on_nonfinite",
    "train.nonfinite_limit",
    "data.workers",
    "data.prefetch",
    "data.device_prefetch",
    // The stack, its kernels and what it recomputes change speed and memory, and results only
    // within the tolerance table.
    "backend.",
    "kernels.",
    "checkpoint.",
];

/// A training-relevant key whose value differs between a checkpoint's recipe and the recipe
/// of the run resuming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyChange {
    /// Dotted key, e.g. `optim.lr`.
    pub key: String,
    /// The checkpoint's value, as TOML (`absent` when unset).
    pub saved: String,
    /// The resuming recipe's value, as TOML (`absent` when unset).
    pub given: String,
}

impl std::fmt::Display for KeyChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` = {} in the checkpoint, {} now",
            self.key, self.saved, self.given
        )
    }
}

/// The training-relevant keys on which `given` differs from `saved`, sorted. `train.max_steps`
/// may grow or shrink unless the learning rate's schedule depends on it (cosine, linear,
/// onecycle).
pub fn training_key_changes(saved: &Recipe, given: &Recipe) -> Vec<KeyChange> {
    let (a, b) = (flatten(saved), flatten(given));
    let max_steps_free = !saved.optim.schedule.depends_on_max_steps()
        && !given.optim.schedule.depends_on_max_steps();
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|key| {
            let free_here = max_steps_free && key.as_str() == "train.max_steps";
            !(is_free(key) || free_here)
        })
        .filter(|key| a.get(*key) != b.get(*key))
        .map(|key| KeyChange {
            key: key.clone(),
            saved: shown(a.get(key)),
            given: shown(b.get(key)),
        })
        .collect()
}

fn is_free(key: &str) -> bool {
    FREE_KEYS.iter().any(|free| match free.strip_suffix('.') {
        Some(section) => key.starts_with(free) || key == section,
        None => key == *free,
    })
}

fn shown(value: Option<&toml::Value>) -> String {
    value.map_or_else(|| "absent".into(), toml::Value::to_string)
}

/// Every leaf of the recipe as `dotted.key → value` (arrays are leaves).
fn flatten(recipe: &Recipe) -> BTreeMap<String, toml::Value> {
    let value = toml::Value::try_from(recipe).expect("a recipe serialises to TOML");
    let mut leaves = BTreeMap::new();
    walk("", &value, &mut leaves);
    leaves
}

fn walk(prefix: &str, value: &toml::Value, leaves: &mut BTreeMap<String, toml::Value>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                walk(&path, value, leaves);
            }
        }
        leaf => {
            leaves.insert(prefix.to_owned(), leaf.clone());
        }
    }
}
