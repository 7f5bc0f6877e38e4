//! The `[model]` keys of the Swin Transformers: preset (`model.name`) plus overrides
//! (`embed_dim`, `depths`, `num_heads`, `window_size`, `patch_size`, `drop_path_rate`) → a
//! [`SwinConfig`], with every impossible size reported under its recipe key.

use super::{DatasetKind, ModelName, Recipe};
use burnacc_models::swin::{SwinConfig, SwinConfigError};

/// The Swin Transformer `r` describes, for `num_classes` outputs and `in_chans` input channels
/// at `data.image_size`: the preset of `model.name` with the recipe's overrides. The error
/// names the recipe key that makes the model impossible.
pub fn swin_config(
    r: &Recipe,
    num_classes: usize,
    in_chans: usize,
) -> Result<SwinConfig, (&'static str, String)> {
    let preset = match r.model.name {
        ModelName::SwinT => SwinConfig::swin_tiny(num_classes),
        ModelName::SwinS => SwinConfig::swin_small(num_classes),
        ModelName::SwinB => SwinConfig::swin_base(num_classes),
        other => {
            return Err((
                "model.name",
                format!("{} is not a Swin Transformer", other.as_str()),
            ));
        }
    };
    let m = r.model.swin().expect("a Swin name has the Swin keys");
    let mut config = preset
        .with_img_size(r.data.image_size)
        .with_in_chans(in_chans);
    if let Some(embed_dim) = m.embed_dim {
        config = config.with_embed_dim(embed_dim);
    }
    if let Some(depths) = &m.depths {
        config = config.with_depths(depths.clone());
    }
    if let Some(num_heads) = &m.num_heads {
        config = config.with_num_heads(num_heads.clone());
    }
    if let Some(window_size) = m.window_size {
        config = config.with_window_size(window_size);
    }
    if let Some(patch_size) = m.patch_size {
        config = config.with_patch_size(patch_size);
    }
    if let Some(rate) = m.drop_path_rate {
        if !(0.0..1.0).contains(&rate) {
            return Err((
                "model.drop_path_rate",
                format!("must be in [0, 1) (got {rate})"),
            ));
        }
        config = config.with_drop_path_rate(rate);
    }
    if let Some(depths) = &m.depths
        && let Some(stage) = depths.iter().position(|&d| d == 0)
    {
        return Err((
            "model.depths",
            format!("stage {stage} has no block (got {depths:?}); every stage needs at least 1"),
        ));
    }
    config
        .validate()
        .map_err(|e| (key_of(&e), message_of(&e)))?;
    Ok(config)
}

/// The recipe key behind a [`SwinConfigError`].
fn key_of(e: &SwinConfigError) -> &'static str {
    match e {
        SwinConfigError::StageCount { .. } | SwinConfigError::Heads { .. } => "model.num_heads",
        SwinConfigError::Zero { field } => match *field {
            "num_classes" => "model.num_classes",
            "img_size" => "data.image_size",
            "patch_size" => "model.patch_size",
            "embed_dim" => "model.embed_dim",
            "window_size" => "model.window_size",
            "depths.len()" => "model.depths",
            _ => "model.name",
        },
        SwinConfigError::ImageSize { .. } => "model.patch_size",
        SwinConfigError::Probability { .. } => "model.drop_path_rate",
    }
}

/// The error's message in the recipe's words (`swin: ` dropped: the key says it).
fn message_of(e: &SwinConfigError) -> String {
    let text = e.to_string();
    let text = text.strip_prefix("swin: ").unwrap_or(&text).to_owned();
    match e {
        SwinConfigError::ImageSize { .. } => text.replace("img_size", "data.image_size"),
        _ => text,
    }
}

/// A Swin recipe's sizes must build a model (`[model]` itself admits only Swin keys with a
/// Swin name).
pub(super) fn check_swin(r: &Recipe) -> Result<(), (&'static str, String)> {
    if !r.model.name.is_swin() {
        return Ok(());
    }
    let in_chans = match r.data.dataset {
        DatasetKind::FashionMnist => 1,
        _ => 3,
    };
    swin_config(r, r.model.num_classes.unwrap_or(1), in_chans).map(|_| ())
}
