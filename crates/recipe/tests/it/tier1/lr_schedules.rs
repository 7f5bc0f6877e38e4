//! Tier 1: every learning-rate schedule against the rates PyTorch's `torch.optim.lr_scheduler`
//! and Hugging Face's `get_linear_schedule_with_warmup` give at each step
//! (`tests/fixtures/lr_schedules.json`, recorded by `scripts/record_lr_schedules.py`), and the
//! schedule keys are checked naming the key.

use burnacc_recipe::{Recipe, learning_rate, parse_recipe};
use std::path::{Path, PathBuf};

fn fixture() -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lr_schedules.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (record it with: pip install torch transformers && python3 \
             scripts/record_lr_schedules.py)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// A recipe whose `[optim]` holds `keys` (a JSON object of recipe keys).
fn recipe_with(keys: &serde_json::Value, sets: &[&str]) -> Result<Recipe, String> {
    let optim: toml::Value = toml::Value::try_from(keys).unwrap();
    let text = format!(
        "[model]\nname = \"resnet18\"\n[optim]\n{}",
        toml::to_string(&optim).unwrap()
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("schedule.toml"), &sets).map_err(|e| e.to_string())
}

#[test]
fn every_schedule_gives_pytorchs_rates() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 7, "the fixture has every schedule");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let recipe = recipe_with(&case["recipe"], &[]).unwrap();
        let total = case["total"].as_u64().unwrap() as usize;
        let rates: Vec<f64> = case["rates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_f64().unwrap())
            .collect();
        assert_eq!(rates.len(), total, "{name}");
        let warmup = recipe.optim.warmup_steps;
        for (step, &expected) in rates.iter().enumerate() {
            let got = learning_rate(&recipe.optim, step, total);
            if step < warmup {
                // burnacc's warm-up starts at lr / warmup_steps, Hugging Face's at 0.
                let ours = recipe.optim.lr * (step + 1) as f64 / warmup as f64;
                assert_eq!(got, ours, "{name}: warm-up step {step}");
                continue;
            }
            let rel = (got - expected).abs() / expected.abs().max(1e-300);
            assert!(
                rel <= 1e-12 || (got - expected).abs() <= 1e-18,
                "{name}: step {step}: {got} vs PyTorch {expected}"
            );
        }
    }
}

#[test]
fn schedule_keys_are_checked_naming_the_key() {
    let cases = [
        (r#"{"schedule": "step", "step_size": 0}"#, "optim.step_size"),
        (r#"{"schedule": "step", "gamma": 0.0}"#, "optim.gamma"),
        (r#"{"schedule": "multistep"}"#, "optim.milestones"),
        (
            r#"{"schedule": "multistep", "milestones": [5, 3]}"#,
            "optim.milestones",
        ),
        (
            r#"{"schedule": "onecycle", "pct_start": 1.0}"#,
            "optim.pct_start",
        ),
        (
            r#"{"schedule": "onecycle", "warmup_steps": 2}"#,
            "optim.warmup_steps",
        ),
        (
            r#"{"schedule": "onecycle", "div_factor": -1.0}"#,
            "optim.div_factor",
        ),
        (r#"{"schedule": "polynomial"}"#, "optim.schedule"),
    ];
    for (keys, key) in cases {
        let keys: serde_json::Value = serde_json::from_str(keys).unwrap();
        let error = recipe_with(&keys, &[]).expect_err(key);
        assert!(
            error.contains(&format!("`{key}`")),
            "{key} not named in: {error}"
        );
        assert!(
            error.contains("schedule.toml"),
            "the file is not named in: {error}"
        );
    }
}
