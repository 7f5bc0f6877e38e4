//! Tier 1: which recipe keys a resumed run may change, and which it is refused for.

use burnacc_recipe::{Recipe, parse_recipe, training_key_changes};
use std::path::Path;

const BASE: &str = r#"
[model]
name = "resnet18"
[optim]
name = "sgd"
lr = 0.1
schedule = "constant"
"#;

fn recipe(sets: &[&str]) -> Recipe {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(BASE, Path::new("resume.toml"), &sets).unwrap()
}

fn changed_keys(saved: &[&str], given: &[&str]) -> Vec<String> {
    training_key_changes(&recipe(saved), &recipe(given))
        .into_iter()
        .map(|c| c.key)
        .collect()
}

#[test]
fn the_same_recipe_changes_nothing() {
    assert!(changed_keys(&[], &[]).is_empty());
}

#[test]
fn training_keys_are_named_with_both_values() {
    let changes = training_key_changes(
        &recipe(&[]),
        &recipe(&["optim.lr=0.2", "train.batch_size=64"]),
    );
    let keys: Vec<&str> = changes.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["optim.lr", "train.batch_size"]);
    assert_eq!(changes[0].saved, "0.1");
    assert_eq!(changes[0].given, "0.2");
    assert_eq!(
        changes[0].to_string(),
        "`optim.lr` = 0.1 in the checkpoint, 0.2 now"
    );
}

#[test]
fn logging_saving_evaluation_and_the_stack_are_free() {
    let free = [
        "train.log_every=3",
        "train.save_every=7",
        "train.keep_last=1",
        "train.eval=false",
        "train.save_model=false",
        "data.workers=3",
        "backend.mode=eager",
        "checkpoint.mode=blocks",
        "kernels.layer_norm=false",
    ];
    assert_eq!(changed_keys(&[], &free), Vec::<String>::new());
}

#[test]
fn max_steps_is_free_only_with_a_constant_learning_rate() {
    assert!(changed_keys(&[], &["train.max_steps=999"]).is_empty());
    assert_eq!(
        changed_keys(
            &["optim.schedule=\"cosine\""],
            &["optim.schedule=\"cosine\"", "train.max_steps=999"]
        ),
        ["train.max_steps"]
    );
}

#[test]
fn a_key_set_on_one_side_only_is_a_change() {
    let changes = training_key_changes(&recipe(&[]), &recipe(&["model.num_classes=7"]));
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].key, "model.num_classes");
    assert_eq!(changes[0].saved, "absent");
    assert_eq!(changes[0].given, "7");
}
