//! [`BertConfig`]: the sizes of a BERT encoder, with presets and Hugging Face `config.json`.

use burn::config::Config;
use std::path::Path;

/// The activation of the feed-forward block (`hidden_act` in Hugging Face's config).
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum HiddenAct {
    /// Exact GELU, `x·Φ(x)` with the error function (Hugging Face `"gelu"`, BERT's default).
    Gelu,
    /// GELU's tanh approximation (Hugging Face `"gelu_new"` / `"gelu_pytorch_tanh"`).
    GeluTanh,
    /// `x·σ(1.702·x)` (Hugging Face `"quick_gelu"`, CLIP's choice): one sigmoid, no `erf`.
    QuickGelu,
}

impl HiddenAct {
    /// The activation Hugging Face calls `name`, if it is one of ours.
    pub fn from_hf_name(name: &str) -> Option<Self> {
        match name {
            "gelu" => Some(HiddenAct::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" => Some(HiddenAct::GeluTanh),
            "quick_gelu" => Some(HiddenAct::QuickGelu),
            _ => None,
        }
    }
}

/// Sizes and hyper-parameters of a BERT model, named as in Hugging Face's `BertConfig`.
#[derive(Config, Debug)]
pub struct BertConfig {
    /// WordPiece vocabulary size (bert-base-uncased: 30522).
    #[config(default = 30522)]
    pub vocab_size: usize,
    /// Width of every token representation.
    #[config(default = 768)]
    pub hidden_size: usize,
    /// Encoder layers.
    #[config(default = 12)]
    pub num_hidden_layers: usize,
    /// Attention heads per layer; `hidden_size` must be a multiple of it.
    #[config(default = 12)]
    pub num_attention_heads: usize,
    /// Width of the feed-forward block.
    #[config(default = 3072)]
    pub intermediate_size: usize,
    /// Feed-forward activation.
    #[config(default = "HiddenAct::Gelu")]
    pub hidden_act: HiddenAct,
    /// Dropout after embeddings, attention output and feed-forward output.
    #[config(default = 0.1)]
    pub hidden_dropout_prob: f64,
    /// Dropout on the attention probabilities.
    #[config(default = 0.1)]
    pub attention_probs_dropout_prob: f64,
    /// Longest sequence the position embeddings cover.
    #[config(default = 512)]
    pub max_position_embeddings: usize,
    /// Token-type (segment A/B) vocabulary.
    #[config(default = 2)]
    pub type_vocab_size: usize,
    /// ε of every LayerNorm.
    #[config(default = 1e-12)]
    pub layer_norm_eps: f64,
    /// Standard deviation of the normal initialisation of weights (biases start at 0).
    #[config(default = 0.02)]
    pub initializer_range: f64,
}

/// Errors reading a Hugging Face `config.json`.
#[derive(Debug, thiserror::Error)]
pub enum BertConfigError {
    /// The file cannot be read or is not JSON.
    #[error("cannot read BERT config {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A key is missing or has the wrong type.
    #[error("BERT config {path}: key `{key}` is missing or not {expected}")]
    Key {
        /// The file.
        path: String,
        /// The key.
        key: &'static str,
        /// The JSON type expected.
        expected: &'static str,
    },
    /// `hidden_act` names an activation this model does not implement.
    #[error(
        "BERT config {path}: hidden_act = {value:?} is not one of gelu, gelu_new, gelu_pytorch_tanh, quick_gelu"
    )]
    Activation {
        /// The file.
        path: String,
        /// The value found.
        value: String,
    },
}

impl BertConfig {
    /// bert-base: 12 layers, hidden 768, 12 heads, feed-forward 3072 (110M parameters).
    pub fn base() -> Self {
        Self::new()
    }

    /// bert-large: 24 layers, hidden 1024, 16 heads, feed-forward 4096 (335M parameters).
    pub fn large() -> Self {
        Self::new()
            .with_hidden_size(1024)
            .with_num_hidden_layers(24)
            .with_num_attention_heads(16)
            .with_intermediate_size(4096)
    }

    /// MiniLM-L6 (all-MiniLM-L6-v2's encoder): 6 layers, hidden 384, 12 heads,
    /// feed-forward 1536 (22.7M parameters).
    pub fn minilm_l6() -> Self {
        Self::new()
            .with_hidden_size(384)
            .with_num_hidden_layers(6)
            .with_num_attention_heads(12)
            .with_intermediate_size(1536)
    }

    /// The preset called `name`: `bert-base`, `bert-large` or `minilm-l6`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "bert-base" => Some(Self::base()),
            "bert-large" => Some(Self::large()),
            "minilm-l6" => Some(Self::minilm_l6()),
            _ => None,
        }
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// Reads the sizes from a Hugging Face `config.json` (keys as `transformers.BertConfig`).
    pub fn from_hf_json(path: &Path) -> Result<Self, BertConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| BertConfigError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| BertConfigError::Read {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        let size = |key: &'static str| {
            json.get(key)
                .and_then(serde_json::Value::as_u64)
                .map(|v| v as usize)
                .ok_or(BertConfigError::Key {
                    path: shown.clone(),
                    key,
                    expected: "an unsigned integer",
                })
        };
        let real = |key: &'static str| {
            json.get(key)
                .and_then(serde_json::Value::as_f64)
                .ok_or(BertConfigError::Key {
                    path: shown.clone(),
                    key,
                    expected: "a number",
                })
        };
        let act_name = json
            .get("hidden_act")
            .and_then(serde_json::Value::as_str)
            .ok_or(BertConfigError::Key {
                path: shown.clone(),
                key: "hidden_act",
                expected: "a string",
            })?;
        let hidden_act =
            HiddenAct::from_hf_name(act_name).ok_or_else(|| BertConfigError::Activation {
                path: shown.clone(),
                value: act_name.to_owned(),
            })?;
        Ok(Self {
            vocab_size: size("vocab_size")?,
            hidden_size: size("hidden_size")?,
            num_hidden_layers: size("num_hidden_layers")?,
            num_attention_heads: size("num_attention_heads")?,
            intermediate_size: size("intermediate_size")?,
            hidden_act,
            hidden_dropout_prob: real("hidden_dropout_prob")?,
            attention_probs_dropout_prob: real("attention_probs_dropout_prob")?,
            max_position_embeddings: size("max_position_embeddings")?,
            type_vocab_size: size("type_vocab_size")?,
            layer_norm_eps: real("layer_norm_eps")?,
            initializer_range: real("initializer_range").unwrap_or(0.02),
        })
    }
}
