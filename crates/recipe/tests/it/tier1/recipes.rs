//! Tier 1: every shipped recipe parses, and bad recipes fail naming the key and the file.

use burnacc_recipe::{
    AmpDtype, DeviceSpec, KernelsSection, Mode, RecipeError, load_recipe, parse_recipe,
};
use std::path::{Path, PathBuf};

fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

fn error_of(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let err =
        parse_recipe(text, Path::new("bad.toml"), &sets).expect_err("the recipe must be refused");
    err.to_string()
}

fn assert_names(message: &str, key: &str) {
    assert!(
        message.contains("bad.toml"),
        "the file is not named in: {message}"
    );
    assert!(
        message.contains(&format!("`{key}`")),
        "the key `{key}` is not named in: {message}"
    );
}

#[test]
fn every_shipped_recipe_parses() {
    let mut seen = 0;
    for dir in [configs_dir(), configs_dir().join("bench")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                parse_recipe(&text, &path, &[]).unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
    }
    assert!(
        seen >= 7,
        "expected the shipped recipes in configs/, found {seen}"
    );
}

#[test]
fn resnet50_recipe_has_the_seed_defaults() {
    let r = load_recipe(&configs_dir().join("resnet50.toml"), &[]).unwrap();
    assert_eq!(r.model.name.as_str(), "resnet50");
    assert_eq!(r.train.batch_size, 128);
    assert_eq!(r.train.max_steps, 200);
    assert_eq!(r.backend.mode, Mode::Acc);
    assert_eq!(r.backend.device, DeviceSpec::Auto);
}

#[test]
fn unknown_keys_are_named() {
    assert_names(
        &error_of("[train]\nbatch_sizee = 4\n", &[]),
        "train.batch_sizee",
    );
    assert_names(&error_of("[trian]\nbatch_size = 4\n", &[]), "trian");
    assert_names(
        &error_of("[data.mock]\nclasess = 4\n", &[]),
        "data.mock.clasess",
    );
}

#[test]
fn wrong_types_are_named() {
    assert_names(
        &error_of("[train]\nbatch_size = \"big\"\n", &[]),
        "train.batch_size",
    );
    assert_names(&error_of("[optim]\nlr = [1]\n", &[]), "optim.lr");
    assert_names(&error_of("[train]\neval = 3\n", &[]), "train.eval");
}

#[test]
fn zero_and_negative_sizes_are_named() {
    assert_names(
        &error_of("[train]\nbatch_size = 0\n", &[]),
        "train.batch_size",
    );
    assert_names(
        &error_of("[train]\nbatch_size = -8\n", &[]),
        "train.batch_size",
    );
    assert_names(
        &error_of("[train]\nmax_steps = 0\n", &[]),
        "train.max_steps",
    );
    assert_names(
        &error_of("[data]\nimage_size = 0\n", &[]),
        "data.image_size",
    );
    assert_names(&error_of("[optim]\nlr = -0.1\n", &[]), "optim.lr");
    assert_names(
        &error_of("[data]\nval_fraction = 1.5\n", &[]),
        "data.val_fraction",
    );
}

#[test]
fn unknown_modes_devices_and_models_are_named() {
    let m = error_of("[backend]\nmode = \"turbo\"\n", &[]);
    assert_names(&m, "backend.mode");
    assert!(
        m.contains("eager") && m.contains("fused") && m.contains("acc"),
        "{m}"
    );
    let d = error_of("[backend]\ndevice = \"tpu\"\n", &[]);
    assert_names(&d, "backend.device");
    assert!(d.contains("cuda:N"), "{d}");
    assert_names(
        &error_of("[backend]\ndevice = \"cuda:x\"\n", &[]),
        "backend.device",
    );
    assert_names(
        &error_of("[model]\nname = \"resnet51\"\n", &[]),
        "model.name",
    );
}

#[test]
fn invalid_toml_names_the_file_and_line() {
    let m = error_of("[train\nbatch_size = 4\n", &[]);
    assert!(m.contains("bad.toml") && m.contains("line 1"), "{m}");
}

#[test]
fn set_overrides_any_key_and_is_checked_like_the_file() {
    let r = parse_recipe(
        "",
        Path::new("x.toml"),
        &["train.max_steps=5".into(), "backend.device=cpu".into()],
    )
    .unwrap();
    assert_eq!(r.train.max_steps, 5);
    assert_eq!(r.backend.device, DeviceSpec::Cpu);
    let r = parse_recipe("", Path::new("x.toml"), &["data.mock.classes=7".into()]).unwrap();
    assert_eq!(r.data.mock.classes, 7);
    assert_names(&error_of("", &["train.max_steps=0"]), "train.max_steps");
    assert_names(&error_of("", &["train.max_stepz=3"]), "train.max_stepz");
    let m = error_of("", &["train.max_steps"]);
    assert!(
        m.contains("--set train.max_steps") && m.contains("key=value"),
        "{m}"
    );
    let m = error_of("[train]\nmax_steps = 3\n", &["train.max_steps.x=3"]);
    assert!(m.contains("is a value, not a section"), "{m}");
}

#[test]
fn missing_dataset_paths_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("missing.toml");
    std::fs::write(
        &file,
        "[data]\ndataset = \"image-folder\"\npath = \"/no/such/folder\"\n",
    )
    .unwrap();
    let err = load_recipe(&file, &[]).unwrap_err();
    assert!(
        matches!(err, RecipeError::Key { ref key, .. } if key == "data.path"),
        "{err}"
    );
    let m = err.to_string();
    assert!(
        m.contains("missing.toml") && m.contains("/no/such/folder"),
        "{m}"
    );
}

#[test]
fn amp_section_defaults_follow_pytorch() {
    let parse = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse_recipe("", Path::new("amp.toml"), &sets).unwrap().amp
    };
    let off = parse(&[]);
    assert!(!off.is_enabled());
    assert!(!off.loss_scaling(), "no loss scaling without autocast");

    let bf16 = parse(&["amp.enabled=true"]);
    assert_eq!(bf16.autocast_dtype(), Some(AmpDtype::Bf16));
    assert!(!bf16.loss_scaling(), "bf16: no loss scaling by default");

    let f16 = parse(&["amp.enabled=true", "amp.dtype=f16"]);
    assert!(f16.loss_scaling(), "f16: loss scaling by default");
    assert_eq!(
        (
            f16.init_scale,
            f16.growth_factor,
            f16.backoff_factor,
            f16.growth_interval
        ),
        (65536.0, 2.0, 0.5, 2000)
    );
    let forced = parse(&["amp.enabled=true", "amp.grad_scaler=true"]);
    assert!(forced.loss_scaling());
    let unscaled = parse(&["amp.enabled=true", "amp.dtype=f16", "amp.grad_scaler=false"]);
    assert!(!unscaled.loss_scaling());

    // TorchAcc's --amp_level.
    assert!(parse(&["amp.level=\"O1\""]).is_enabled());
    assert!(!parse(&["amp.level=\"O0\""]).is_enabled());
}

#[test]
fn bad_amp_settings_are_named() {
    for (sets, key) in [
        (&["amp.dtype=f32"][..], "amp.dtype"),
        (&["amp.level=\"O2\""][..], "amp.level"),
        (&["amp.enabled=true", "amp.level=\"O0\""][..], "amp.level"),
        (
            &["amp.enabled=true", "backend.mode=eager"][..],
            "amp.enabled",
        ),
        (
            &["amp.level=\"O1\"", "backend.mode=fused"][..],
            "amp.enabled",
        ),
        (&["amp.grad_scaler=true"][..], "amp.grad_scaler"),
        (
            &["amp.enabled=true", "amp.backoff_factor=1.5"][..],
            "amp.backoff_factor",
        ),
        (&["amp.init_scale=0.0"][..], "amp.init_scale"),
        (&["amp.growth_factor=1.0"][..], "amp.growth_factor"),
        (&["amp.growth_interval=0"][..], "amp.growth_interval"),
        (&["amp.enabeld=true"][..], "amp.enabeld"),
    ] {
        assert_names(&error_of("", sets), key);
    }
}

#[test]
fn kernel_keys_need_mode_acc() {
    assert_names(
        &error_of("", &["backend.mode=eager", "kernels.layer_norm=true"]),
        "kernels.layer_norm",
    );
    assert_names(
        &error_of("", &["kernels.flash_attention=true"]),
        "kernels.flash_attention",
    );
    let r = parse_recipe("[kernels]\nlayer_norm = true\n", Path::new("ok.toml"), &[]).unwrap();
    assert!(r.kernels.layer_norm);
}

#[test]
fn mode_acc_switches_every_kernel_on_unless_the_recipe_opts_out() {
    let parse = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse_recipe("", Path::new("ok.toml"), &sets).unwrap()
    };
    let all_but = |skip: &str| -> Vec<&str> {
        KernelsSection::keys()
            .into_iter()
            .filter(|key| *key != skip)
            .collect()
    };
    // The default recipe trains with SGD in mode acc: every key but Adam's.
    let acc = parse(&[]);
    assert_eq!(acc.kernels.enabled(), all_but("kernels.adam"));
    assert_eq!(acc.kernels.by_default, acc.kernels.enabled());
    let adamw = parse(&["optim.name=\"adamw\""]);
    assert_eq!(adamw.kernels.enabled(), all_but("kernels.sgd"));
    // A key the recipe gives is the recipe's: off when opted out, and not a default when on.
    let opted_out = parse(&["kernels.layer_norm=false", "kernels.swin_fmha=true"]);
    assert!(!opted_out.kernels.layer_norm);
    assert!(opted_out.kernels.swin_fmha);
    assert!(!opted_out.kernels.by_default.contains(&"kernels.layer_norm"));
    assert!(!opted_out.kernels.by_default.contains(&"kernels.swin_fmha"));
    for mode in ["eager", "fused"] {
        let r = parse(&[&format!("backend.mode=\"{mode}\"")]);
        assert!(r.kernels.enabled().is_empty(), "{mode}");
        assert!(r.kernels.by_default.is_empty(), "{mode}");
    }
}

#[test]
fn ddp_settings_are_checked() {
    let defaults = parse_recipe("", Path::new("ok.toml"), &[]).unwrap();
    assert_eq!(defaults.ddp.bucket.bytes(), Ok(25 << 20));
    assert_eq!(defaults.ddp.timeout_secs, 300.0);
    let r = parse_recipe(
        "[ddp]\nbucket = \"1MiB\"\ntimeout_secs = 5\n",
        Path::new("ok.toml"),
        &[],
    )
    .unwrap();
    assert_eq!(
        (r.ddp.bucket.bytes(), r.ddp.timeout_secs),
        (Ok(1 << 20), 5.0)
    );
    assert_names(&error_of("", &["ddp.bucket=2"]), "ddp.bucket");
    assert_names(&error_of("", &["ddp.bucket=\"lots\""]), "ddp.bucket");
    assert_names(&error_of("", &["ddp.timeout_secs=0"]), "ddp.timeout_secs");
    assert_names(&error_of("", &["ddp.devices=2"]), "ddp.devices");
}

#[test]
fn checkpoint_mode_is_checked() {
    assert_names(
        &error_of("", &["checkpoint.mode=everything"]),
        "checkpoint.mode",
    );
    // auto needs a budget, only auto takes one, and the budget must be a size.
    assert_names(
        &error_of("", &["checkpoint.mode=auto"]),
        "checkpoint.budget",
    );
    assert_names(
        &error_of("", &["checkpoint.mode=blocks", "checkpoint.budget=8GiB"]),
        "checkpoint.budget",
    );
    let bad_unit = error_of("", &["checkpoint.mode=auto", "checkpoint.budget=8 parsecs"]);
    assert_names(&bad_unit, "checkpoint.budget");
    assert!(bad_unit.contains("parsecs"), "{bad_unit}");
    let auto = parse_recipe(
        "[checkpoint]\nmode = \"auto\"\nbudget = \"1.5 GiB\"\n",
        Path::new("ok.toml"),
        &[],
    )
    .unwrap();
    assert_eq!(auto.checkpoint.budget_bytes(), Some(3 << 29));
    let r = parse_recipe(
        "[checkpoint]\nmode = \"blocks\"\n",
        Path::new("ok.toml"),
        &[],
    )
    .unwrap();
    assert_eq!(r.checkpoint.mode, burnacc_recipe::CheckpointMode::Blocks);
}

const TEXT_RECIPE: &str = "[model]\nname = \"minilm-l6\"\n[data]\ndataset = \"rotten-tomatoes\"\n";

#[test]
fn text_recipes_parse_with_their_defaults() {
    let r = parse_recipe(TEXT_RECIPE, Path::new("text.toml"), &[]).unwrap();
    assert!(r.model.name.is_text());
    assert_eq!(r.data.max_length, 128);
    assert!(!r.data.packing);
    assert_eq!(r.model.bert_dropout(), 0.1);
    let r = load_recipe(&configs_dir().join("bert_base.toml"), &[]);
    // The default corpus may be absent on this machine: then the error names the file.
    if let Err(e) = &r {
        let message = e.to_string();
        assert!(
            message.contains("rotten_tomatoes_corpus.csv.bz2"),
            "{message}"
        );
        assert!(message.contains("scripts/fetch_text_data.sh"), "{message}");
    }
    let text = std::fs::read_to_string(configs_dir().join("bert_base.toml")).unwrap();
    let r = parse_recipe(&text, Path::new("bert_base.toml"), &[]).unwrap();
    assert_eq!(r.model.name.as_str(), "bert-base");
    assert_eq!((r.train.batch_size, r.data.max_length), (128, 512));
    assert_eq!(r.amp.autocast_dtype(), Some(AmpDtype::Bf16));
}

#[test]
fn bad_text_settings_are_named() {
    let cases: [(&[&str], &str); 6] = [
        (&["data.dataset=fashion-mnist"], "data.dataset"),
        (&["model.name=resnet18"], "data.dataset"),
        (&["data.max_length=1"], "data.max_length"),
        (&["data.max_length=513"], "data.max_length"),
        (&["model.dropout=1.0"], "model.dropout"),
        (
            &["model.name=bert-base", "model.pretrained=true"],
            "model.pretrained",
        ),
    ];
    for (sets, key) in cases {
        let message = error_of(TEXT_RECIPE, sets);
        assert_names(&message, key);
    }
    assert_names(
        &error_of(
            "[model]\nname = \"minilm-l6\"\n[data]\ndataset = \"sst2-tsv\"\n",
            &[],
        ),
        "data.path",
    );
    assert_names(
        &error_of("[model]\npretrained = true\n", &[]),
        "model.pretrained",
    );
    // Checkpointing BERT layers is fine with dropout: recomputed layers replay their masks.
    let sets = ["checkpoint.mode=blocks".to_string()];
    let r = parse_recipe(TEXT_RECIPE, Path::new("text.toml"), &sets).unwrap();
    assert_eq!(r.model.bert_dropout(), 0.1);
}

#[test]
fn missing_text_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("text.toml");
    let tsv = dir.path().join("train.tsv");
    std::fs::write(&tsv, "sentence\tlabel\ngood\t1\n").unwrap();
    let text = format!(
        "[model]\nname = \"minilm-l6\"\nweights = {:?}\n[data]\ndataset = \"sst2-tsv\"\npath = {:?}\ntokenizer = {:?}\n",
        dir.path().join("absent.safetensors"),
        tsv,
        dir.path().join("absent-tokenizer.json"),
    );
    std::fs::write(&recipe, &text).unwrap();
    let message = load_recipe(&recipe, &[]).unwrap_err().to_string();
    assert!(
        message.contains("`data.tokenizer`") && message.contains("absent-tokenizer.json"),
        "{message}"
    );
    let tokenizer = dir.path().join("tokenizer.json");
    std::fs::write(&tokenizer, "{}").unwrap();
    let sets = [format!("data.tokenizer={tokenizer:?}")];
    let message = load_recipe(&recipe, &sets).unwrap_err().to_string();
    assert!(
        message.contains("`model.weights`") && message.contains("absent.safetensors"),
        "{message}"
    );
    let sets = [
        format!("data.tokenizer={tokenizer:?}"),
        format!("data.path={:?}", dir.path().join("absent.tsv")),
    ];
    let message = load_recipe(&recipe, &sets).unwrap_err().to_string();
    assert!(
        message.contains("`data.path`") && message.contains("absent.tsv"),
        "{message}"
    );
}
