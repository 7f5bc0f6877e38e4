//! Tier 3: a tiny Swin Transformer trains from a recipe on the CPU stacks (eager and acc agree,
//! the loss goes down, held-out accuracy is reported), its blocks can be checkpointed, and bad
//! Swin keys are refused naming the key.

use crate::common::{losses, rel, tiny_swin};
use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::recipe::{parse_recipe, swin_config};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::path::Path;

const STEPS: usize = 8;

/// Training runs of this file one at a time: Flex has one random generator per process, and a
/// run drawing stochastic depth (or reseeding it for checkpointed blocks) while another draws
/// its initial weights would change those weights.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(root: &Path, stack: Stack, steps: usize, sets: &[&str]) -> RunSummary {
    let recipe = tiny_swin(root, steps, sets);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    run_checked(&recipe, Path::new("tiny_swin.toml"), stack, &options)
        .unwrap_or_else(|e| panic!("{stack} {sets:?}: {e:#}"))
}

/// The tiny recipe builds the Swin its keys describe.
#[test]
fn swin_keys_override_the_preset() {
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_swin(root.path(), 1, &[]);
    let config = swin_config(&recipe, 4, 3).unwrap();
    assert_eq!(
        (config.img_size, config.patch_size, config.embed_dim),
        (16, 2, 16)
    );
    assert_eq!((config.depths, config.num_heads), (vec![2, 2], vec![1, 2]));
    assert_eq!((config.window_size, config.drop_path_rate), (4, 0.0));
    assert_eq!((config.num_classes, config.in_chans), (4, 3));

    // Without overrides: the presets, at the recipe's image size.
    for (name, embed, depths) in [
        ("swin-t", 96, vec![2, 2, 6, 2]),
        ("swin-s", 96, vec![2, 2, 18, 2]),
        ("swin-b", 128, vec![2, 2, 18, 2]),
    ] {
        let text = format!("[model]\nname = \"{name}\"\n");
        let recipe = parse_recipe(&text, Path::new("preset.toml"), &[]).unwrap();
        assert_eq!(recipe.model.name.as_str(), name);
        assert!(recipe.model.name.is_swin() && !recipe.model.name.is_text());
        let config = swin_config(&recipe, 1000, 3).unwrap();
        assert_eq!((config.embed_dim, config.depths), (embed, depths), "{name}");
        assert_eq!(
            (config.img_size, config.patch_size, config.window_size),
            (224, 4, 7)
        );
    }
}

#[test]
fn eager_and_acc_train_swin_alike_and_evaluate() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let root = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for stack in [
        Stack::new(Mode::Eager, DeviceSpec::Cpu),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
    ] {
        let summary = run(root.path(), stack, STEPS, &[]);
        let l = losses(&summary);
        assert_eq!(l.len(), STEPS, "{stack}: one log line per step");
        assert!(l.iter().all(|x| x.is_finite()), "{stack}: {l:?}");
        // 24 training images of 4 learnable classes: a few steps must fit them visibly.
        assert!(
            l[STEPS - 1] < 0.7 * l[0],
            "{stack}: loss did not go down: {l:?}"
        );
        let eval = summary.outcome.eval.expect("held-out accuracy");
        assert_eq!(
            eval.samples, 8,
            "{stack}: a quarter of 32 images is held out"
        );
        runs.push((stack, l, eval.correct));
    }
    // Same seed → same weights (drawn on the host) and data: acc only reroutes ops, so the
    // two models also classify the held-out images alike.
    let (eager, acc) = (&runs[0].1, &runs[1].1);
    assert_eq!(
        runs[0].2, runs[1].2,
        "held-out images classified correctly: eager vs acc"
    );
    for (step, (a, e)) in acc.iter().zip(eager).enumerate() {
        assert!(
            rel(*a, *e) < 1e-4,
            "step {}: acc {a} vs eager {e}\n{acc:?}\n{eager:?}",
            step + 1
        );
    }
}

#[test]
fn checkpointed_swin_blocks_train_like_plain_blocks() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let root = tempfile::tempdir().unwrap();
    let steps = 3;
    let plain = run(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        steps,
        &[],
    );
    assert_eq!(plain.outcome.stats.checkpointed_blocks, 0);
    let blocks = run(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        steps,
        &["checkpoint.mode=blocks"],
    );
    // 2 stages × 2 blocks; the patch merging runs outside them.
    assert_eq!(blocks.outcome.stats.checkpointed_blocks, 4);
    let (p, b) = (losses(&plain), losses(&blocks));
    for (step, (x, y)) in b.iter().zip(&p).enumerate() {
        assert!(
            rel(*x, *y) < 1e-5,
            "step {}: {x} checkpointed vs {y} plain",
            step + 1
        );
    }

    // With stochastic depth the checkpointed blocks replay their draws on recompute, and every
    // block draws from a seed of its position whether checkpointed or not: the same losses
    // again. `auto` measures the same 4 blocks.
    let drop_path = "model.drop_path_rate=0.2";
    let plain = run(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        steps,
        &[drop_path],
    );
    let blocks = run(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        steps,
        &[drop_path, "checkpoint.mode=blocks"],
    );
    assert_eq!(blocks.outcome.stats.checkpointed_blocks, 4);
    let auto = run(
        root.path(),
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        steps,
        &[drop_path, "checkpoint.mode=auto", "checkpoint.budget=1GiB"],
    );
    let chosen = auto.outcome.stats.auto_checkpoint.clone().unwrap();
    assert_eq!(chosen.blocks, 4, "{chosen:?}");
    let (dp, db, da) = (losses(&plain), losses(&blocks), losses(&auto));
    for (step, ((x, y), z)) in db.iter().zip(&dp).zip(&da).enumerate() {
        assert!(
            rel(*x, *y) < 1e-5 && rel(*z, *y) < 1e-5,
            "drop path, step {}: {x} checkpointed, {z} auto vs {y} plain",
            step + 1
        );
    }
    // The comparison can fail: the dropped paths change the losses.
    assert!(
        dp.iter().zip(&p).skip(1).any(|(x, y)| rel(*x, *y) > 1e-4),
        "drop path changed nothing: {dp:?} vs {p:?}"
    );
}

/// The error refusing the CPU recipe with `sets` applied.
fn error_of(sets: &[&str]) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/swin_fashion_mnist_cpu.toml"),
    )
    .unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("bad.toml"), &sets)
        .expect_err("the recipe must be refused")
        .to_string()
}

#[test]
fn bad_swin_keys_are_named() {
    let cases: &[(&[&str], &str)] = &[
        (&["model.num_heads=[2, 4]"], "model.num_heads"),
        (&["model.num_heads=[3, 4, 8]"], "model.num_heads"),
        (&["model.embed_dim=0"], "model.embed_dim"),
        (&["model.embed_dim=33"], "model.num_heads"),
        (&["model.window_size=0"], "model.window_size"),
        (&["model.patch_size=0"], "model.patch_size"),
        (&["model.patch_size=64"], "model.patch_size"),
        (&["model.depths=[2, 0, 2]"], "model.depths"),
        (&["model.depths=[]", "model.num_heads=[]"], "model.depths"),
        (&["model.drop_path_rate=1.0"], "model.drop_path_rate"),
        (&["model.drop_path_rate=-0.1"], "model.drop_path_rate"),
        (&["model.depths=2"], "model.depths"),
        (&["model.num_classes=0"], "model.num_classes"),
        // ResNet keys on a Swin, Swin keys on a ResNet or a BERT.
        (&["model.base_width=32"], "model.base_width"),
        (&["model.small_input_stem=true"], "model.small_input_stem"),
        (&["model.name=resnet18"], "model.embed_dim"),
        (&["model.name=swin-x"], "model.name"),
        (&["data.dataset=rotten-tomatoes"], "data.dataset"),
    ];
    for (sets, key) in cases {
        let message = error_of(sets);
        assert!(
            message.contains("bad.toml") && message.contains(&format!("`{key}`")),
            "{sets:?}: the key `{key}` is not named in: {message}"
        );
    }
}

#[test]
fn shipped_swin_recipes_parse() {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let read = |name: &str| {
        let path = configs.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        parse_recipe(&text, &path, &[]).unwrap_or_else(|e| panic!("{e}"))
    };
    let t = read("swin_t.toml");
    assert_eq!(t.model.name.as_str(), "swin-t");
    assert_eq!((t.data.image_size, t.data.mock.classes), (224, 1000));
    assert_eq!(t.train.batch_size, 128);
    assert_eq!((t.optim.lr, t.optim.weight_decay), (1e-3, 0.05));
    let config = swin_config(&t, 1000, 3).unwrap();
    assert_eq!((config.embed_dim, config.drop_path_rate), (96, 0.2));

    let cpu = read("swin_fashion_mnist_cpu.toml");
    let config = swin_config(&cpu, 10, 1).unwrap();
    assert_eq!(
        (config.img_size, config.patch_size, config.in_chans),
        (32, 4, 1)
    );
    assert_eq!(config.depths.len(), config.num_heads.len());
}
