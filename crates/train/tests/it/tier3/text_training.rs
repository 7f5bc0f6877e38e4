//! Tier 3: fine-tuning the imported all-MiniLM-L6-v2 on Rotten Tomatoes through the trainer.
//! Packing and layer checkpointing change how a step is computed, not what: without dropout
//! they give the losses of plain padded batches at every step, and with dropout a checkpointed
//! run gives the losses of a plain one.
//!
//! Needs the files of `scripts/fetch_text_data.sh`; without them each test says so and passes
//! without checking.

use crate::common::{losses, rel};
use burnacc_backend::counters;
use burnacc_datasets::text::{
    fetched_or_skip, minilm_present, rotten_tomatoes_present, text_data_dir,
};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::recipe::{Recipe, parse_recipe};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::path::Path;
use std::sync::Mutex;

/// Whether the text data is there; skips (and under CI fails) when it is not.
fn data_present() -> bool {
    let dir = text_data_dir();
    let present = minilm_present(&dir) && rotten_tomatoes_present(&dir);
    fetched_or_skip(
        present,
        "the MiniLM checkpoint and the Rotten Tomatoes corpus",
        &dir,
    )
}

/// MiniLM-L6 from its published weights, batches of 8 snippets cut to 32 tokens, AdamW,
/// `steps` steps logged every step, 32 held-out snippets.
fn text_recipe(root: &Path, steps: usize, sets: &[&str]) -> Recipe {
    let text = format!(
        r#"
        [model]
        name = "minilm-l6"
        pretrained = true
        [data]
        dataset = "rotten-tomatoes"
        max_length = 32
        [train]
        batch_size = 8
        max_steps = {steps}
        log_every = 1
        eval_batch_size = 16
        eval_max_batches = 2
        save_model = false
        run_dir = {runs:?}
        [optim]
        name = "adamw"
        lr = 5e-5
        schedule = "constant"
        [backend]
        mode = "acc"
        device = "cpu"
        "#,
        runs = root.join("runs"),
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("text.toml"), &sets).unwrap()
}

/// Runs one at a time: the initial weights are drawn from Flex's process-wide generator, which
/// runs in parallel test threads would interleave.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(root: &Path, steps: usize, sets: &[&str]) -> RunSummary {
    let _only = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    run_checked(
        &text_recipe(root, steps, sets),
        Path::new("text.toml"),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &options,
    )
    .unwrap()
}

#[test]
fn minilm_fine_tunes_from_its_published_weights() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let summary = run(root.path(), 2, &["data.packing=true"]);
    let pretrained = summary
        .outcome
        .pretrained
        .as_ref()
        .expect("weights were imported");
    assert_eq!(pretrained.loaded, 103, "{pretrained:?}");
    let mut fresh = pretrained.fresh.clone();
    fresh.sort();
    assert_eq!(fresh, ["classifier.bias", "classifier.weight"]);
    // The file's position-id buffer, under its remapped name.
    assert_eq!(pretrained.unused, ["bert.embeddings.position_ids"]);

    // 4866 labelled snippets, 10% held out per class.
    assert_eq!(summary.train_samples + summary.eval_samples, 2455 + 2411);
    assert_eq!(summary.eval_samples, 246 + 241);
    let padding = summary.padding.expect("text runs report padding");
    eprintln!(
        "padding: {:.3} padded, {:.3} packed",
        padding.padded, padding.packed
    );
    assert!(
        padding.packing && padding.packed < padding.padded,
        "{padding:?}"
    );

    // A fresh two-class head on the pooled features starts near ln 2.
    let first = summary.outcome.stats.first_loss;
    assert!((0.3..1.2).contains(&first), "first loss {first}");
    let eval = summary.outcome.eval.expect("evaluated");
    assert_eq!(eval.samples, 32);
}

#[test]
fn packing_and_layer_checkpointing_train_like_padded_batches() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    const STEPS: usize = 3;
    let plain = losses(&run(root.path(), STEPS, &["model.dropout=0.0"]));
    let packed = losses(&run(
        root.path(),
        STEPS,
        &["model.dropout=0.0", "data.packing=true"],
    ));
    let checkpointed = run(
        root.path(),
        STEPS,
        &["model.dropout=0.0", "checkpoint.mode=blocks"],
    );
    assert_eq!(checkpointed.outcome.stats.checkpointed_blocks, 6);
    let checkpointed = losses(&checkpointed);
    for (name, other) in [("packed", &packed), ("checkpointed", &checkpointed)] {
        for (step, (a, b)) in other.iter().zip(&plain).enumerate() {
            assert!(
                rel(*a, *b) < 1e-4,
                "{name} step {}: {a} vs {b} padded\n{other:?}\n{plain:?}",
                step + 1
            );
        }
    }
    // With dropout on (the model's 0.1), a checkpointed layer replays its masks and every
    // layer draws from a seed of its position: checkpointing still changes nothing.
    let dropped = losses(&run(root.path(), STEPS, &[]));
    let dropped_checkpointed = losses(&run(root.path(), STEPS, &["checkpoint.mode=blocks"]));
    for (step, (a, b)) in dropped_checkpointed.iter().zip(&dropped).enumerate() {
        assert!(
            rel(*a, *b) < 1e-4,
            "dropout, step {}: {a} checkpointed vs {b} plain\n{dropped_checkpointed:?}\n{dropped:?}",
            step + 1
        );
    }
    assert!(
        dropped.iter().zip(&plain).any(|(a, b)| rel(*a, *b) > 1e-4),
        "dropout changed nothing: {dropped:?} vs {plain:?}"
    );
}

#[test]
fn a_corrupted_corpus_is_named() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let corpus = root.path().join("corpus.csv.bz2");
    let original = burnacc_datasets::text::rotten_tomatoes_path(&text_data_dir(), false);
    let bytes = std::fs::read(original).unwrap();
    std::fs::write(&corpus, &bytes[..bytes.len() / 2]).unwrap();
    let path = format!("data.path={corpus:?}");
    let recipe = text_recipe(root.path(), 1, &[&path]);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let err = run_checked(
        &recipe,
        Path::new("text.toml"),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &options,
    )
    .unwrap_err();
    let message = format!("{err:#}");
    assert!(message.contains("corpus.csv.bz2"), "{message}");
    assert!(
        !root.path().join("runs").exists(),
        "no run folder is made for bad data"
    );
}

#[test]
fn the_fused_layer_norm_trains_like_burns_layer_norm() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    const STEPS: usize = 3;
    let fused_calls = || counters::snapshot().kernel("fused_layer_norm");
    let before = fused_calls();
    let plain = losses(&run(
        root.path(),
        STEPS,
        &["model.dropout=0.0", "kernels.layer_norm=false"],
    ));
    assert_eq!(fused_calls(), before, "the recipe opted out");
    let fused = losses(&run(
        root.path(),
        STEPS,
        &["model.dropout=0.0", "kernels.layer_norm=true"],
    ));
    // MiniLM: 13 LayerNorms (embeddings, 2 per layer × 6) per forward pass, every step.
    assert_eq!(fused_calls() - before, 13 * STEPS as u64);
    for (step, (a, b)) in fused.iter().zip(&plain).enumerate() {
        assert!(
            rel(*a, *b) < 1e-4,
            "step {}: {a} fused vs {b} Burn's layer_norm\n{fused:?}\n{plain:?}",
            step + 1
        );
    }
}

#[test]
fn the_fused_feed_forward_ops_train_like_burns_ops() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    const STEPS: usize = 3;
    let calls = |name| counters::snapshot().kernel(name);
    let (gelu_before, add_before) = (calls("fused_bias_gelu"), calls("fused_bias_dropout_add"));
    // Without dropout the fused ops compute what Burn's do; only rounding differs.
    let plain = losses(&run(
        root.path(),
        STEPS,
        &[
            "model.dropout=0.0",
            "kernels.bias_gelu=false",
            "kernels.bias_dropout_add=false",
        ],
    ));
    assert_eq!(
        (calls("fused_bias_gelu"), calls("fused_bias_dropout_add")),
        (gelu_before, add_before),
        "the recipe opted out"
    );
    let fused = losses(&run(
        root.path(),
        STEPS,
        &[
            "model.dropout=0.0",
            "kernels.bias_gelu=true",
            "kernels.bias_dropout_add=true",
        ],
    ));
    // MiniLM: 6 layers, each with one GELU expansion and two residual outputs per forward.
    assert_eq!(calls("fused_bias_gelu") - gelu_before, 6 * STEPS as u64);
    assert_eq!(
        calls("fused_bias_dropout_add") - add_before,
        12 * STEPS as u64
    );
    for (step, (a, b)) in fused.iter().zip(&plain).enumerate() {
        assert!(
            rel(*a, *b) < 1e-4,
            "step {}: {a} fused vs {b} Burn's ops\n{fused:?}\n{plain:?}",
            step + 1
        );
    }
    // With dropout the fused op draws its own masks: training still learns, every loss finite.
    let dropped = losses(&run(
        root.path(),
        STEPS,
        &["kernels.bias_gelu=true", "kernels.bias_dropout_add=true"],
    ));
    assert!(dropped.iter().all(|l| l.is_finite()), "{dropped:?}");
    assert_ne!(dropped, fused, "dropout 0.1 changed nothing");
}

#[test]
fn the_fused_quick_gelu_trains_like_burns_ops() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    const STEPS: usize = 3;
    let calls = || counters::snapshot().kernel("fused_quick_gelu");
    let before = calls();
    let quick = ["model.dropout=0.0", "model.hidden_act=quick-gelu"];
    let plain = losses(&run(
        root.path(),
        STEPS,
        &[quick[0], quick[1], "kernels.quick_gelu=false"],
    ));
    assert_eq!(calls(), before, "the recipe opted out");
    let fused = losses(&run(
        root.path(),
        STEPS,
        &[quick[0], quick[1], "kernels.quick_gelu=true"],
    ));
    // MiniLM: 6 layers, each with one QuickGELU per forward pass.
    assert_eq!(calls() - before, 6 * STEPS as u64);
    for (step, (a, b)) in fused.iter().zip(&plain).enumerate() {
        assert!(
            rel(*a, *b) < 1e-4,
            "step {}: {a} fused vs {b} Burn's ops\n{fused:?}\n{plain:?}",
            step + 1
        );
    }
    // The activation matters: the same model with exact GELU trains otherwise.
    let gelu = losses(&run(root.path(), STEPS, &["model.dropout=0.0"]));
    assert!(
        rel(gelu[STEPS - 1], plain[STEPS - 1]) > 1e-6,
        "{gelu:?} {plain:?}"
    );
}

#[test]
fn adamw_updates_the_parameters_in_place() {
    if !data_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let adam = burnacc_kernels::optim::multi_tensor_adam_launches();
    let copies = burnacc_kernels::optim::multi_tensor_buffer_copies();
    run(root.path(), 3, &[]);
    assert!(
        burnacc_kernels::optim::multi_tensor_adam_launches() > adam,
        "acc's fused AdamW did not run"
    );
    assert_eq!(
        burnacc_kernels::optim::multi_tensor_buffer_copies(),
        copies,
        "the fused AdamW copied parameters or state: something else still holds them"
    );
}
