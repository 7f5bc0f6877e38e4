//! `[model]`: which network (`name`), the keys every family shares, and the keys of its
//! family, as one enum variant per family.
//!
//! The TOML stays flat (`[model] name = "swin-t" embed_dim = 32`): `name` picks the family,
//! whose struct then reads the other keys. A key of another family is an error naming the
//! key and the family it belongs to. Adding a family: its `ModelFamilyName`, its keys struct,
//! and its arms in [`FamilyKeys`], `FamilyKeys::keys_of` and `FamilyKeys::from_table`.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use std::path::PathBuf;

/// The networks a recipe can name: ResNets and Swin Transformers for images, BERTs for text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum ModelName {
    Resnet18,
    Resnet34,
    Resnet50,
    Resnet101,
    Resnet152,
    /// Swin-T (timm `swin_tiny_patch4_window7_224`).
    #[serde(rename = "swin-t")]
    SwinT,
    /// Swin-S (timm `swin_small_patch4_window7_224`).
    #[serde(rename = "swin-s")]
    SwinS,
    /// Swin-B (timm `swin_base_patch4_window7_224`).
    #[serde(rename = "swin-b")]
    SwinB,
    #[serde(rename = "bert-base")]
    BertBase,
    #[serde(rename = "bert-large")]
    BertLarge,
    /// all-MiniLM-L6-v2's encoder: BERT with 6 layers of width 384.
    #[serde(rename = "minilm-l6")]
    MinilmL6,
}

impl ModelName {
    /// The recipe's spelling: torchvision's name (`resnet50`) or `swin-t`, `swin-s`, `swin-b`,
    /// `bert-base`, `bert-large`, `minilm-l6`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelName::Resnet18 => "resnet18",
            ModelName::Resnet34 => "resnet34",
            ModelName::Resnet50 => "resnet50",
            ModelName::Resnet101 => "resnet101",
            ModelName::Resnet152 => "resnet152",
            ModelName::SwinT => "swin-t",
            ModelName::SwinS => "swin-s",
            ModelName::SwinB => "swin-b",
            ModelName::BertBase => "bert-base",
            ModelName::BertLarge => "bert-large",
            ModelName::MinilmL6 => "minilm-l6",
        }
    }

    /// True for the BERT family (text classification), false for image models.
    pub fn is_text(self) -> bool {
        self.family() == ModelFamilyName::Bert
    }

    /// True for the Swin Transformers (image classification).
    pub fn is_swin(self) -> bool {
        self.family() == ModelFamilyName::Swin
    }

    /// The family the network belongs to.
    pub fn family(self) -> ModelFamilyName {
        match self {
            ModelName::Resnet18
            | ModelName::Resnet34
            | ModelName::Resnet50
            | ModelName::Resnet101
            | ModelName::Resnet152 => ModelFamilyName::ResNet,
            ModelName::SwinT | ModelName::SwinS | ModelName::SwinB => ModelFamilyName::Swin,
            ModelName::BertBase | ModelName::BertLarge | ModelName::MinilmL6 => {
                ModelFamilyName::Bert
            }
        }
    }
}

/// Families of networks: one construction, one import, one forward pass per family, sizes
/// per name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFamilyName {
    /// torchvision's ResNets (images).
    ResNet,
    /// timm's Swin Transformers (images).
    Swin,
    /// Hugging Face's BERTs (text).
    Bert,
}

/// Feed-forward activation of a BERT (`model.hidden_act`): `gelu`, `gelu-tanh`, `quick-gelu`
/// (Hugging Face's spellings `gelu_new`, `gelu_pytorch_tanh`, `quick_gelu` are accepted too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HiddenActName {
    /// Exact GELU (BERT's).
    Gelu,
    /// GELU's tanh approximation.
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh")]
    GeluTanh,
    /// x·σ(1.702·x).
    #[serde(alias = "quick_gelu")]
    QuickGelu,
}

/// `[model]`
#[derive(Clone, Debug, Serialize)]
pub struct ModelSection {
    /// Network: resnet18, resnet34, resnet50, resnet101, resnet152; swin-t, swin-s, swin-b;
    /// bert-base, bert-large, minilm-l6.
    pub name: ModelName,
    /// Output classes; defaults to the dataset's number of classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_classes: Option<usize>,
    /// Start from published weights (BERT family): minilm-l6 loads all-MiniLM-L6-v2 as
    /// fetched by `scripts/fetch_text_data.sh`. Others need `model.weights`.
    pub pretrained: bool,
    /// Weights to start from, safetensors or a `torch.save` pickle (`.pth`, `.bin`): a Hugging
    /// Face BERT (BERT family; implies pretrained), a timm Swin or a torchvision ResNet (their
    /// classifier is kept when it has the recipe's number of classes, and drawn afresh
    /// otherwise). docs/weights.md.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<PathBuf>,
    /// The keys of `name`'s family.
    #[serde(flatten)]
    pub family: FamilyKeys,
}

/// The keys of one family of `[model]`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum FamilyKeys {
    /// ResNets.
    ResNet(ResNetKeys),
    /// Swin Transformers.
    Swin(SwinKeys),
    /// BERTs.
    Bert(BertKeys),
}

/// The ResNet keys of `[model]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResNetKeys {
    /// Width of the first stage (torchvision: 64); later stages are 2×, 4×, 8×.
    pub base_width: usize,
    /// 3×3 stride-1 stem without max-pool, for 28–32 px images (the ResNet paper's CIFAR stem).
    pub small_input_stem: bool,
}

impl Default for ResNetKeys {
    fn default() -> Self {
        Self {
            base_width: 64,
            small_input_stem: false,
        }
    }
}

/// The Swin Transformer keys of `[model]`: overrides of the preset `name` gives.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SwinKeys {
    /// Channels of stage 0 (stage `i` has `embed_dim · 2^i`); default: the preset's (96 for
    /// swin-t/s, 128 for swin-b).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_dim: Option<usize>,
    /// Blocks per stage, one entry per stage (e.g. `[2, 2, 6, 2]`); default: the preset's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depths: Option<Vec<usize>>,
    /// Attention heads per stage, one entry per stage; each stage's channels must be a
    /// multiple of its heads. Default: the preset's (`[3, 6, 12, 24]` for swin-t/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_heads: Option<Vec<usize>>,
    /// Side of the attention windows (default 7); a stage whose map is smaller uses its whole
    /// map as one window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_size: Option<usize>,
    /// Side of the patches the stem embeds (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_size: Option<usize>,
    /// Stochastic depth rate of the last block, growing linearly from 0 over the blocks
    /// (default 0.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop_path_rate: Option<f64>,
}

/// The BERT keys of `[model]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BertKeys {
    /// Feed-forward activation; default: the model's (exact GELU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_act: Option<HiddenActName>,
    /// Dropout of hidden states and attention probabilities; default 0.1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropout: Option<f64>,
}

/// Keys every family reads.
const SHARED_KEYS: [&str; 4] = ["name", "num_classes", "pretrained", "weights"];

impl FamilyKeys {
    /// The family's own keys (besides the shared ones), in the order of its struct (errors
    /// name the first one set). A tier-1 test checks them against the structs' fields.
    pub fn keys_of(family: ModelFamilyName) -> &'static [&'static str] {
        match family {
            ModelFamilyName::ResNet => &["base_width", "small_input_stem"],
            ModelFamilyName::Swin => &[
                "embed_dim",
                "depths",
                "num_heads",
                "window_size",
                "patch_size",
                "drop_path_rate",
            ],
            ModelFamilyName::Bert => &["hidden_act", "dropout"],
        }
    }

    /// The family's keys in `table` (the shared keys removed); an error names its key.
    fn from_table(family: ModelFamilyName, table: toml::Table) -> Result<Self, String> {
        fn read<T: serde::de::DeserializeOwned>(table: toml::Table) -> Result<T, String> {
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let message = e.inner().to_string();
                let message = message.lines().next().unwrap_or_default();
                format!("key `model.{}`: {message}", e.path())
            })
        }
        Ok(match family {
            ModelFamilyName::ResNet => Self::ResNet(read(table)?),
            ModelFamilyName::Swin => Self::Swin(read(table)?),
            ModelFamilyName::Bert => Self::Bert(read(table)?),
        })
    }
}

impl ModelFamilyName {
    /// The family in a message, with its names.
    pub fn describe(self) -> &'static str {
        match self {
            Self::ResNet => "ResNets (resnet18 … resnet152)",
            Self::Swin => "Swin Transformers (swin-t, swin-s, swin-b)",
            Self::Bert => "BERTs (bert-base, bert-large, minilm-l6)",
        }
    }

    /// Every family.
    pub const ALL: [ModelFamilyName; 3] = [Self::ResNet, Self::Swin, Self::Bert];
}

impl<'de> Deserialize<'de> for ModelSection {
    /// `name` first, then the shared keys, then the keys of `name`'s family. Errors start with
    /// "key `model.<key>`: " (the recipe loader reports that key).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut table = toml::Table::deserialize(deserializer)?;
        fn take<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            table: &mut toml::Table,
            key: &str,
        ) -> Result<Option<T>, E> {
            table
                .remove(key)
                .map(|v| v.try_into())
                .transpose()
                .map_err(|e: toml::de::Error| {
                    E::custom(format!("key `model.{key}`: {}", e.message().trim_end()))
                })
        }
        let name: ModelName =
            take::<_, D::Error>(&mut table, "name")?.unwrap_or(ModelName::Resnet50);
        let num_classes = take::<_, D::Error>(&mut table, "num_classes")?;
        let pretrained = take::<_, D::Error>(&mut table, "pretrained")?.unwrap_or(false);
        let weights = take::<_, D::Error>(&mut table, "weights")?;
        let family = name.family();
        if let Some(message) = foreign_key(name, &table) {
            return Err(D::Error::custom(message));
        }
        let own: toml::Table = table
            .into_iter()
            .filter(|(k, _)| FamilyKeys::keys_of(family).contains(&k.as_str()))
            .collect();
        let family = FamilyKeys::from_table(family, own).map_err(D::Error::custom)?;
        Ok(Self {
            name,
            num_classes,
            pretrained,
            weights,
            family,
        })
    }
}

/// The first key of `table` (the shared keys removed) that `name`'s family does not read,
/// as an error message naming it: keys of other families first, in their structs' order, then
/// unknown keys.
fn foreign_key(name: ModelName, table: &toml::Table) -> Option<String> {
    let family = name.family();
    // Recipes written by earlier versions (a run folder's recipe.toml) hold every ResNet key
    // at its default: those still read.
    let resnet_defaults =
        toml::Table::try_from(ResNetKeys::default()).expect("the keys serialise to a TOML table");
    for owner in ModelFamilyName::ALL.into_iter().filter(|f| *f != family) {
        for key in FamilyKeys::keys_of(owner) {
            let Some(value) = table.get(*key) else {
                continue;
            };
            if owner == ModelFamilyName::ResNet && resnet_defaults.get(*key) == Some(value) {
                continue;
            }
            return Some(format!(
                "key `model.{key}`: applies to {}, not {}",
                owner.describe(),
                name.as_str()
            ));
        }
    }
    let known = |key: &str| {
        ModelFamilyName::ALL
            .into_iter()
            .any(|f| FamilyKeys::keys_of(f).contains(&key))
    };
    let unknown = table.keys().find(|key| !known(key))?;
    let mut reads: Vec<&str> = SHARED_KEYS.to_vec();
    reads.extend(FamilyKeys::keys_of(family));
    Some(format!(
        "key `model.{unknown}`: unknown key; {} reads: {}",
        name.as_str(),
        reads.join(", ")
    ))
}

impl ModelSection {
    /// The ResNet keys, if `name` is a ResNet.
    pub fn resnet(&self) -> Option<&ResNetKeys> {
        match &self.family {
            FamilyKeys::ResNet(keys) => Some(keys),
            _ => None,
        }
    }

    /// The Swin keys, if `name` is a Swin Transformer.
    pub fn swin(&self) -> Option<&SwinKeys> {
        match &self.family {
            FamilyKeys::Swin(keys) => Some(keys),
            _ => None,
        }
    }

    /// The BERT keys, if `name` is a BERT.
    pub fn bert(&self) -> Option<&BertKeys> {
        match &self.family {
            FamilyKeys::Bert(keys) => Some(keys),
            _ => None,
        }
    }

    /// The BERT dropout probability this recipe trains with (0.1 unless `model.dropout`).
    pub fn bert_dropout(&self) -> f64 {
        self.bert().and_then(|b| b.dropout).unwrap_or(0.1)
    }
}

impl Default for ModelSection {
    fn default() -> Self {
        Self {
            name: ModelName::Resnet50,
            num_classes: None,
            pretrained: false,
            weights: None,
            family: FamilyKeys::ResNet(ResNetKeys::default()),
        }
    }
}
