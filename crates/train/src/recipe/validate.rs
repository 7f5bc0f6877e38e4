//! Value checks that types alone cannot express (sizes > 0, fractions in range, paths present).

use super::{DatasetKind, Recipe};

/// Returns the first impossible value as (dotted key, message).
pub(super) fn validate(r: &Recipe) -> Result<(), (&'static str, String)> {
    let positive = [
        ("model.base_width", r.model.base_width),
        ("data.image_size", r.data.image_size),
        ("data.workers", r.data.workers),
        ("data.prefetch", r.data.prefetch),
        ("data.mock.classes", r.data.mock.classes),
        ("data.mock.images_per_class", r.data.mock.images_per_class),
        ("data.mock.image_size", r.data.mock.image_size),
        ("train.batch_size", r.train.batch_size),
        ("train.max_steps", r.train.max_steps),
        ("train.log_every", r.train.log_every),
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
    r.amp.validate(r.backend.mode == super::Mode::Acc)
}

/// Checks that the dataset folders the recipe names (or defaults to) exist.
pub(super) fn check_paths(r: &Recipe) -> Result<(), (&'static str, String)> {
    let path = match (r.data.dataset, &r.data.path) {
        (DatasetKind::ImageFolder, None) => {
            return Err(("data.path", "is required for dataset image-folder".into()));
        }
        (DatasetKind::FashionMnist, None) => Some(burnacc_datasets::fashion_mnist_dir()),
        (DatasetKind::MockImagenet, _) => None,
        (_, Some(p)) => Some(p.clone()),
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
    match &r.data.val_path {
        Some(p) if !p.is_dir() => {
            Err(("data.val_path", format!("{} is not a folder", p.display())))
        }
        _ => Ok(()),
    }
}

fn fetch_hint(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::FashionMnist => " (fetch it with scripts/fetch_fashion_mnist.sh)",
        _ => "",
    }
}
