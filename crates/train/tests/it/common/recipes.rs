//! The tiny recipes of the training tests: a ResNet-18 of width 8 and a Swin of width 16 on
//! 16 px mock images. Shared with burnacc-bench's tests.

use burnacc_train::recipe::{Recipe, parse_recipe};
use std::path::Path;

/// A ResNet-18 of width 8 on 32 generated 16 px images of 4 learnable classes (written under
/// `root/mock`), SGD with momentum, `steps` steps logged every step, runs under `root/runs`.
/// `sets` are `--set` overrides.
pub fn tiny_recipe(root: &Path, steps: usize, sets: &[&str]) -> Recipe {
    let text = format!(
        r#"
        [model]
        name = "resnet18"
        base_width = 8
        small_input_stem = true
        {data_and_train}        [optim]
        name = "sgd"
        lr = 0.05
        schedule = "constant"
        "#,
        data_and_train = mock_data_and_train(root, steps),
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("tiny.toml"), &sets).unwrap()
}

/// A Swin of width 16 (patch 2, window 4, 2 stages of 2 blocks, 1 and 2 heads) on 32 generated
/// 16 px images of 4 learnable classes (written under `root/mock`), AdamW, `steps` steps logged
/// every step, runs under `root/runs`. `sets` are `--set` overrides.
pub fn tiny_swin(root: &Path, steps: usize, sets: &[&str]) -> Recipe {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(
        &tiny_swin_text(root, steps),
        Path::new("tiny_swin.toml"),
        &sets,
    )
    .unwrap()
}

/// The text of [`tiny_swin`]'s recipe.
pub fn tiny_swin_text(root: &Path, steps: usize) -> String {
    format!(
        r#"
        [model]
        name = "swin-t"
        patch_size = 2
        embed_dim = 16
        depths = [2, 2]
        num_heads = [1, 2]
        window_size = 4
        drop_path_rate = 0.0
        {data_and_train}
        save_model = false
        [optim]
        name = "adamw"
        lr = 3e-3
        weight_decay = 0.05
        schedule = "constant"
        "#,
        data_and_train = mock_data_and_train(root, steps),
    )
}

/// The `[data]` (32 generated 16 px images of 4 classes under `root/mock`, a quarter held out)
/// and `[train]` (batch 8, `steps` steps logged every step, runs under `root/runs`) sections
/// of the tiny recipes.
fn mock_data_and_train(root: &Path, steps: usize) -> String {
    format!(
        r#"
        [data]
        dataset = "mock-imagenet"
        path = {data:?}
        image_size = 16
        resize = 18
        val_fraction = 0.25
        workers = 1
        [data.mock]
        classes = 4
        images_per_class = 8
        image_size = 20
        [train]
        batch_size = 8
        max_steps = {steps}
        log_every = 1
        run_dir = {runs:?}
        "#,
        data = root.join("mock"),
        runs = root.join("runs"),
    )
}
