//! Value checks that types alone cannot express (sizes > 0, fractions in range, paths present).

use super::{DatasetKind, OptimizerName, Recipe};

/// Returns the first impossible value as (dotted key, message).
pub(super) fn validate(r: &Recipe) -> Result<(), (&'static str, String)> {
    let positive = [
        (
            "model.base_width",
            r.model.resnet().map_or(1, |k| k.base_width),
        ),
        ("data.image_size", r.data.image_size),
        ("data.workers", r.data.workers),
        ("data.prefetch", r.data.prefetch),
        ("data.mock.classes", r.data.mock.classes),
        ("data.mock.images_per_class", r.data.mock.images_per_class),
        ("data.mock.image_size", r.data.mock.image_size),
        ("train.batch_size", r.train.batch_size),
        ("train.accumulate", r.train.accumulate),
        ("train.max_steps", r.train.max_steps),
        ("train.log_every", r.train.log_every),
        ("train.nonfinite_limit", r.train.nonfinite_limit),
    ];
    for (key, value) in positive {
        if value == 0 {
            return Err((key, "must be greater than 0 (got 0)".into()));
        }
    }
    let optional_positive = [
        ("model.num_classes", r.model.num_classes),
        ("data.resize", r.data.resize),
        ("train.eval_batch_size", r.train.eval_batch_size),
        ("train.eval_max_batches", r.train.eval_max_batches),
    ];
    for (key, value) in optional_positive {
        if value == Some(0) {
            return Err((key, "must be greater than 0 (got 0)".into()));
        }
    }
    if let Some(resize) = r.data.resize
        && resize < r.data.image_size
    {
        return Err((
            "data.resize",
            format!(
                "{resize} is smaller than data.image_size {}",
                r.data.image_size
            ),
        ));
    }
    if !(0.0..1.0).contains(&r.data.val_fraction) {
        return Err((
            "data.val_fraction",
            format!("must be in [0, 1) (got {})", r.data.val_fraction),
        ));
    }
    check_checkpoint(&r.checkpoint)?;
    check_kernels(r)?;
    check_ddp(&r.ddp)?;
    let o = &r.optim;
    for (key, value) in [("optim.lr", o.lr), ("optim.eps", o.eps)] {
        if !(value > 0.0 && value.is_finite()) {
            return Err((key, format!("must be a finite number > 0 (got {value})")));
        }
    }
    for (key, value) in [
        ("optim.momentum", o.momentum),
        ("optim.betas", o.betas[0]),
        ("optim.betas", o.betas[1]),
    ] {
        if !(0.0..1.0).contains(&value) {
            return Err((key, format!("must be in [0, 1) (got {value})")));
        }
    }
    if !(o.weight_decay >= 0.0 && o.weight_decay.is_finite()) {
        return Err((
            "optim.weight_decay",
            format!("must be >= 0 (got {})", o.weight_decay),
        ));
    }
    if !(o.min_lr >= 0.0 && o.min_lr <= o.lr) {
        return Err((
            "optim.min_lr",
            format!("must be in [0, optim.lr] (got {})", o.min_lr),
        ));
    }
    if o.nesterov && o.momentum == 0.0 {
        return Err(("optim.nesterov", "needs optim.momentum > 0".into()));
    }
    check_schedule(o)?;
    validate_family(r)?;
    r.amp.validate(r.backend.mode == super::Mode::Acc)
}

/// The keys of the chosen learning-rate schedule.
fn check_schedule(o: &super::OptimSection) -> Result<(), (&'static str, String)> {
    use super::Schedule;
    let positive_finite = |key: &'static str, value: f64| {
        if value > 0.0 && value.is_finite() {
            Ok(())
        } else {
            Err((key, format!("must be a finite number > 0 (got {value})")))
        }
    };
    match o.schedule {
        Schedule::Step => {
            positive_finite("optim.gamma", o.gamma)?;
            if o.step_size == 0 {
                return Err(("optim.step_size", "must be greater than 0 (got 0)".into()));
            }
        }
        Schedule::Multistep => {
            positive_finite("optim.gamma", o.gamma)?;
            if o.milestones.is_empty() {
                return Err((
                    "optim.milestones",
                    "schedule \"multistep\" needs at least one milestone".into(),
                ));
            }
            if o.milestones.windows(2).any(|w| w[0] >= w[1]) {
                return Err((
                    "optim.milestones",
                    format!("must be increasing (got {:?})", o.milestones),
                ));
            }
        }
        Schedule::Onecycle => {
            if !(o.pct_start > 0.0 && o.pct_start < 1.0) {
                return Err((
                    "optim.pct_start",
                    format!("must be in (0, 1) (got {})", o.pct_start),
                ));
            }
            positive_finite("optim.div_factor", o.div_factor)?;
            positive_finite("optim.final_div_factor", o.final_div_factor)?;
            if o.warmup_steps > 0 {
                return Err((
                    "optim.warmup_steps",
                    "schedule \"onecycle\" rises by itself (optim.pct_start); set 0".into(),
                ));
            }
        }
        Schedule::Constant | Schedule::Cosine | Schedule::Linear => {}
    }
    Ok(())
}

/// Image models need image datasets and text models text datasets; text-only keys in range.
fn validate_family(r: &Recipe) -> Result<(), (&'static str, String)> {
    let (model, dataset) = (r.model.name, r.data.dataset);
    if model.is_text() != dataset.is_text() {
        let wanted = if model.is_text() {
            "rotten-tomatoes or sst2-tsv"
        } else {
            "image-folder, mock-imagenet or fashion-mnist"
        };
        return Err((
            "data.dataset",
            format!(
                "{} does not feed model {} (use {wanted})",
                dataset.as_str(),
                model.as_str()
            ),
        ));
    }
    if !model.is_text() {
        if r.model.pretrained {
            return Err((
                "model.pretrained",
                format!(
                    "no published {} weights are available offline{}",
                    model.as_str(),
                    if model.is_swin() {
                        ": set model.weights to a timm checkpoint (safetensors or .pth)"
                    } else {
                        ": set model.weights to a torchvision checkpoint (.pth or safetensors)"
                    }
                ),
            ));
        }
        return Ok(());
    }
    if dataset == super::DatasetKind::Sst2Tsv && r.data.path.is_none() {
        return Err(("data.path", "is required for dataset sst2-tsv".into()));
    }
    if !(3..=512).contains(&r.data.max_length) {
        return Err((
            "data.max_length",
            format!(
                "must be in [3, 512] ([CLS], a token, [SEP]; BERT's 512 positions), got {}",
                r.data.max_length
            ),
        ));
    }
    let dropout = r.model.bert_dropout();
    if !(0.0..1.0).contains(&dropout) {
        return Err((
            "model.dropout",
            format!("must be in [0, 1) (got {dropout})"),
        ));
    }
    if r.model.pretrained && r.model.weights.is_none() && model != super::ModelName::MinilmL6 {
        return Err((
            "model.pretrained",
            format!(
                "no published {} weights are available offline: set model.weights to a \
                 Hugging Face model.safetensors or pytorch_model.bin",
                model.as_str()
            ),
        ));
    }
    Ok(())
}

/// Checks that the dataset folders the recipe names (or defaults to) exist.
pub(super) fn check_paths(r: &Recipe) -> Result<(), (&'static str, String)> {
    if r.data.dataset.is_text() {
        return check_text_paths(r);
    }
    let path = match (r.data.dataset, &r.data.path) {
        (DatasetKind::ImageFolder, None) => {
            return Err(("data.path", "is required for dataset image-folder".into()));
        }
        (DatasetKind::FashionMnist, None) => Some(burnacc_datasets::fashion_mnist_dir()),
        (DatasetKind::MockImagenet, _) => None,
        (_, Some(p)) => Some(p.clone()),
        (DatasetKind::RottenTomatoes | DatasetKind::Sst2Tsv, None) => {
            unreachable!("text recipes are checked by check_text_paths")
        }
    };
    if let Some(p) = path
        && !p.is_dir()
    {
        return Err((
            "data.path",
            format!(
                "{} is not a folder{}",
                p.display(),
                fetch_hint(r.data.dataset)
            ),
        ));
    }
    if let Some(p) = &r.data.val_path
        && !p.is_dir()
    {
        return Err(("data.val_path", format!("{} is not a folder", p.display())));
    }
    match &r.model.weights {
        Some(p) if !p.is_file() => Err(("model.weights", format!("{} is not a file", p.display()))),
        _ => Ok(()),
    }
}

/// The text files a text recipe reads: corpus, tokenizer, weights.
fn check_text_paths(r: &Recipe) -> Result<(), (&'static str, String)> {
    let paths = super::text_paths::TextPaths::of(r);
    let hint = " (fetch it with scripts/fetch_text_data.sh)";
    let mut files = vec![
        ("data.path", &paths.corpus, paths.corpus_is_default),
        (
            "data.tokenizer",
            &paths.tokenizer,
            r.data.tokenizer.is_none(),
        ),
    ];
    if let Some(weights) = &paths.weights {
        files.push(("model.weights", weights, r.model.weights.is_none()));
    }
    for (key, file, is_default) in files {
        if !file.is_file() {
            let hint = if is_default { hint } else { "" };
            return Err((key, format!("{} is not a file{hint}", file.display())));
        }
    }
    match &r.data.val_path {
        Some(p) if !p.is_file() => Err(("data.val_path", format!("{} is not a file", p.display()))),
        _ => Ok(()),
    }
}

fn fetch_hint(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::FashionMnist => " (fetch it with scripts/fetch_fashion_mnist.sh)",
        _ => "",
    }
}

fn mode_name(mode: super::CheckpointMode) -> &'static str {
    match mode {
        super::CheckpointMode::None => "none",
        super::CheckpointMode::Blocks => "blocks",
        super::CheckpointMode::Auto => "auto",
    }
}

/// A bucket holds at least one f32; the timeout is a positive number of seconds.
fn check_ddp(d: &super::DdpSection) -> Result<(), (&'static str, String)> {
    let bucket = d.bucket.bytes().map_err(|e| ("ddp.bucket", e))?;
    if bucket < 4 {
        return Err((
            "ddp.bucket",
            format!("must hold at least one f32, 4 bytes (got {bucket})"),
        ));
    }
    if !(d.timeout_secs > 0.0 && d.timeout_secs.is_finite()) {
        return Err((
            "ddp.timeout_secs",
            format!("must be a finite number > 0 (got {})", d.timeout_secs),
        ));
    }
    Ok(())
}

/// `auto` needs a budget, and only `auto` takes one.
fn check_checkpoint(c: &super::CheckpointSection) -> Result<(), (&'static str, String)> {
    match (c.mode, &c.budget) {
        (super::CheckpointMode::Auto, None) => Err((
            "checkpoint.budget",
            "mode = \"auto\" needs a budget: the activation memory a step may keep, e.g. \
             budget = \"8GiB\""
                .into(),
        )),
        (super::CheckpointMode::Auto, Some(budget)) => budget
            .bytes()
            .map(|_| ())
            .map_err(|e| ("checkpoint.budget", e)),
        (mode, Some(_)) => Err((
            "checkpoint.budget",
            format!(
                "applies to mode = \"auto\" only (mode is \"{}\")",
                mode_name(mode)
            ),
        )),
        (_, None) => Ok(()),
    }
}

/// `[kernels]`: every key needs mode acc; the optimizer keys need their optimizer.
fn check_kernels(r: &Recipe) -> Result<(), (&'static str, String)> {
    if let Some(&key) = r.kernels.enabled().first()
        && r.backend.mode != super::Mode::Acc
    {
        return Err((
            key,
            format!(
                "burnacc's kernels run in mode acc; backend.mode is \"{}\"",
                r.backend.mode
            ),
        ));
    }
    let optimizer = r.optim.name;
    let is_adam = matches!(optimizer, OptimizerName::Adam | OptimizerName::Adamw);
    if r.kernels.adam && !is_adam {
        return Err((
            "kernels.adam",
            format!(
                "fuses Adam/AdamW steps, but optim.name is \"{}\"",
                format!("{optimizer:?}").to_lowercase()
            ),
        ));
    }
    if r.kernels.sgd && optimizer != OptimizerName::Sgd {
        return Err((
            "kernels.sgd",
            format!(
                "fuses SGD steps, but optim.name is \"{}\"",
                format!("{optimizer:?}").to_lowercase()
            ),
        ));
    }
    Ok(())
}
