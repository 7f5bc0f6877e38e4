//! Tier 3: Swin and ResNet recipes start from timm and torchvision weights (`model.weights`):
//! the whole model when the file's classifier has the recipe's classes, the backbone with a
//! fresh classifier otherwise; a file of another configuration is refused naming it, and a
//! missing file is refused with the recipe. The weights are the parity tests' fixtures
//! (`models/tests/fixtures/swin_w4_36px.safetensors`, `resnet18_w8.safetensors`; recorded by
//! `scripts/record_swin_fixture.py` and `scripts/record_resnet_fixture.py`).

use burnacc_train::recipe::{DeviceSpec, Mode, Recipe, parse_recipe};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::path::{Path, PathBuf};

use crate::common::losses;

fn fixture_of(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../models/tests/fixtures/{name}.safetensors"))
}

fn fixture() -> PathBuf {
    fixture_of("swin_w4_36px")
}

/// `model` (a `[model]` section) on `image_size` px mock images of `classes` classes under
/// `root`, 2 steps of 4 with `optim` (an `[optim]` section) on the CPU, no evaluation.
fn mock_recipe(
    root: &Path,
    model: &str,
    optim: &str,
    image_size: usize,
    classes: usize,
    sets: &[&str],
) -> Result<Recipe, String> {
    let text = format!(
        r#"
        {model}
        [data]
        dataset = "mock-imagenet"
        path = {mock:?}
        image_size = {image_size}
        resize = {resize}
        val_fraction = 0.25
        workers = 1
        [data.mock]
        classes = {classes}
        images_per_class = 4
        image_size = {resize}
        [train]
        batch_size = 4
        max_steps = 2
        log_every = 1
        save_model = false
        eval = false
        run_dir = {runs:?}
        {optim}
        [backend]
        mode = "eager"
        device = "cpu"
        "#,
        resize = image_size + 4,
        mock = root.join(format!("mock-{classes}")),
        runs = root.join("runs"),
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(&text, Path::new("imported_weights.toml"), &sets).map_err(|e| e.to_string())
}

/// The fixture's Swin (patch 4, window 4, width 8, depths 2-2-1-1) on 36 px mock images of
/// `classes` classes, 2 steps, under `root`.
fn recipe(root: &Path, classes: usize, sets: &[&str]) -> Result<Recipe, String> {
    let model = r#"
        [model]
        name = "swin-t"
        patch_size = 4
        embed_dim = 8
        depths = [2, 2, 1, 1]
        num_heads = [2, 2, 4, 8]
        window_size = 4"#;
    let optim = "[optim]\nname = \"adamw\"\nlr = 1e-3\nschedule = \"constant\"";
    mock_recipe(root, model, optim, 36, classes, sets)
}

fn train(recipe: &Recipe) -> anyhow::Result<RunSummary> {
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let stack = Stack::new(Mode::Eager, DeviceSpec::Cpu);
    run_checked(recipe, Path::new("imported_weights.toml"), stack, &options)
}

#[test]
fn a_swin_recipe_starts_from_timm_weights() {
    let root = tempfile::tempdir().unwrap();
    let weights = format!("model.weights={:?}", fixture().display().to_string());

    // 10 classes, as the file's classifier: everything loads.
    let whole = train(&recipe(root.path(), 10, &[&weights]).unwrap()).unwrap();
    let p = whole
        .outcome
        .pretrained
        .as_ref()
        .expect("weights were imported");
    assert!(p.fresh.is_empty(), "nothing drawn afresh: {:?}", p.fresh);
    assert!(p.loaded > 30, "{} tensors loaded", p.loaded);
    assert!(
        p.unused.iter().any(|k| k == "logits"),
        "the fixture's outputs are unused: {:?}",
        p.unused
    );
    let drawn = train(&recipe(root.path(), 10, &[]).unwrap()).unwrap();
    assert!(drawn.outcome.pretrained.is_none());
    assert_ne!(
        losses(&whole)[0],
        losses(&drawn)[0],
        "the imported weights changed nothing"
    );

    // 4 classes: the backbone loads, the classifier is drawn.
    let backbone = train(&recipe(root.path(), 4, &[&weights]).unwrap()).unwrap();
    let p = backbone.outcome.pretrained.as_ref().unwrap();
    assert_eq!(p.fresh, ["head.fc.bias", "head.fc.weight"]);
    assert_eq!(
        p.loaded,
        whole.outcome.pretrained.as_ref().unwrap().loaded - 2
    );
}

#[test]
fn weights_that_do_not_fit_are_refused_naming_the_file_and_the_key() {
    let root = tempfile::tempdir().unwrap();
    let file = fixture().display().to_string();
    let weights = format!("model.weights={file:?}");
    // Width 16: every tensor has another shape.
    let wide = recipe(root.path(), 10, &[&weights, "model.embed_dim=16"]).unwrap();
    let error = format!(
        "{:#}",
        train(&wide).expect_err("a width-8 file for a width-16 model")
    );
    assert!(
        error.contains(&file) && error.contains("model.weights"),
        "{error}"
    );

    // Checked with the recipe file, before any work.
    let file_path = root.path().join("swin_weights.toml");
    let text = burnacc_train::recipe::recipe_toml(&recipe(root.path(), 10, &[]).unwrap());
    std::fs::write(&file_path, text).unwrap();
    let missing = burnacc_train::recipe::load_recipe(
        &file_path,
        &["model.weights=\"/no/such/swin.safetensors\"".to_owned()],
    );
    let error = missing.expect_err("a missing file").to_string();
    assert!(
        error.contains("`model.weights`") && error.contains("/no/such/swin.safetensors"),
        "{error}"
    );
}

/// The fixture's ResNet-18 structure at width 8 on 32 px mock images of `classes` classes.
fn resnet_recipe(root: &Path, classes: usize, weights: &str) -> Recipe {
    let model = format!("[model]\nname = \"resnet18\"\nbase_width = 8\nweights = {weights:?}");
    let optim = "[optim]\nname = \"sgd\"\nlr = 0.01\nschedule = \"constant\"";
    mock_recipe(root, &model, optim, 32, classes, &[]).unwrap()
}

#[test]
fn a_resnet_recipe_starts_from_torchvision_weights() {
    let root = tempfile::tempdir().unwrap();
    let weights = fixture_of("resnet18_w8").display().to_string();
    let whole = train(&resnet_recipe(root.path(), 10, &weights)).unwrap();
    let p = whole
        .outcome
        .pretrained
        .as_ref()
        .expect("weights were imported");
    assert!(p.fresh.is_empty(), "{:?}", p.fresh);
    // Every conv, batch norm (4 tensors each) and fc tensor of ResNet-18's structure.
    assert!(p.loaded > 90, "{} tensors loaded", p.loaded);
    let extras = |k: &String| k.ends_with("num_batches_tracked") || k == "input" || k == "logits";
    assert!(p.unused.iter().all(extras), "{:?}", p.unused);

    let backbone = train(&resnet_recipe(root.path(), 4, &weights)).unwrap();
    let p = backbone.outcome.pretrained.as_ref().unwrap();
    assert_eq!(p.fresh, ["fc.bias", "fc.weight"]);

    // Bottleneck weights for a basic-block recipe: named.
    let other = fixture_of("resnet50_w4").display().to_string();
    let refused = train(&resnet_recipe(root.path(), 10, &other));
    let error = format!("{:#}", refused.expect_err("another structure"));
    assert!(
        error.contains(&other) && error.contains("model.weights"),
        "{error}"
    );
}

#[test]
fn a_pth_checkpoint_starts_a_run_whose_export_has_timms_keys() {
    let root = tempfile::tempdir().unwrap();
    // A `torch.save({"state_dict": …})` training checkpoint of the same weights.
    let pth = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/tests/fixtures/swin_w4_36px.pth");
    let weights = format!("model.weights={:?}", pth.display().to_string());
    let recipe = recipe(root.path(), 10, &[&weights, "train.save_model=true"]).unwrap();
    let run = train(&recipe).unwrap();
    let p = run
        .outcome
        .pretrained
        .as_ref()
        .expect("weights were imported");
    assert!(p.fresh.is_empty(), "the whole model loads: {:?}", p.fresh);
    let safetensors = train(
        &self::recipe(
            root.path(),
            10,
            &[&format!(
                "model.weights={:?}",
                fixture().display().to_string()
            )],
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        losses(&run),
        losses(&safetensors),
        "the same weights, the same run"
    );

    // The run's export: timm's keys (the fixture's parameters), f32, timm in the metadata.
    let bytes = std::fs::read(run.run_dir.join("model.safetensors")).unwrap();
    let export = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut keys: Vec<String> = export.names().into_iter().map(str::to_owned).collect();
    keys.sort();
    let fixture_bytes = std::fs::read(fixture()).unwrap();
    let fixture = safetensors::SafeTensors::deserialize(&fixture_bytes).unwrap();
    let mut expected: Vec<String> = fixture
        .names()
        .into_iter()
        .filter(|k| !(k.starts_with("stage") || *k == "input" || *k == "logits"))
        .map(str::to_owned)
        .collect();
    expected.sort();
    assert_eq!(keys, expected);
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let metadata = header.metadata().clone().unwrap();
    assert_eq!(metadata["library"], "timm");
    let config: serde_json::Value = serde_json::from_str(&metadata["reference_config"]).unwrap();
    assert_eq!(config["embed_dim"], 8);
    assert_eq!(config["num_classes"], 10);
    assert_eq!(config["img_size"], 36);
}
