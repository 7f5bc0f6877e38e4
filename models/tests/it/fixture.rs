//! Reading the committed reference fixtures (`models/tests/fixtures/*.safetensors`): f32 and
//! i64 tensors, the metadata, and the configuration each records. Shared with burnacc-train's
//! tests (included there by path); each including crate says where the fixtures are
//! (`crate::FIXTURE_DIR`).

use std::collections::HashMap;
use std::path::PathBuf;

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_models::{BertConfig, BertInput, BlockKind, HiddenAct, ResNetConfig, SwinConfig};
use safetensors::SafeTensors;
use safetensors::tensor::Dtype;

/// The path of fixture `name` (without `.safetensors`).
pub fn fixture_path(name: &str) -> PathBuf {
    fixture_file(&format!("{name}.safetensors"))
}

/// The path of the fixture file `file_name`.
pub fn fixture_file(file_name: &str) -> PathBuf {
    PathBuf::from(crate::FIXTURE_DIR).join(file_name)
}

/// One fixture file: its tensors as f32 or i64 values with their shapes, and its metadata.
pub struct Fixture {
    /// The file name without `.safetensors`.
    pub name: String,
    floats: HashMap<String, (Vec<usize>, Vec<f32>)>,
    ints: HashMap<String, (Vec<usize>, Vec<i64>)>,
    /// The string metadata.
    pub metadata: HashMap<String, String>,
}

impl Fixture {
    /// Reads `tests/fixtures/{name}.safetensors`; panics with the command that records it
    /// (`script`, under `scripts/`) when it is missing.
    pub fn open(name: &str, script: &str) -> Self {
        let path = fixture_path(name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (record it with: python3 scripts/{script})",
                path.display()
            )
        });
        let (_, header) = SafeTensors::read_metadata(&bytes).expect("safetensors header");
        let metadata = header.metadata().clone().unwrap_or_default();
        let file = SafeTensors::deserialize(&bytes).expect("the fixture is safetensors");
        let mut floats = HashMap::new();
        let mut ints = HashMap::new();
        for (key, view) in file.tensors() {
            let shape = view.shape().to_vec();
            match view.dtype() {
                Dtype::F32 => {
                    let values = view.data().chunks_exact(4);
                    let values = values.map(|b| f32::from_le_bytes(b.try_into().unwrap()));
                    floats.insert(key, (shape, values.collect()));
                }
                Dtype::I64 => {
                    let values = view.data().chunks_exact(8);
                    let values = values.map(|b| i64::from_le_bytes(b.try_into().unwrap()));
                    ints.insert(key, (shape, values.collect()));
                }
                other => panic!("{name}: {key} is {other:?}"),
            }
        }
        Self {
            name: name.to_owned(),
            floats,
            ints,
            metadata,
        }
    }

    /// The f32 tensor `key`: shape and values.
    pub fn floats(&self, key: &str) -> &(Vec<usize>, Vec<f32>) {
        self.floats
            .get(key)
            .unwrap_or_else(|| panic!("{}: no f32 tensor {key}", self.name))
    }

    /// The i64 tensor `key`: shape and values.
    pub fn ints(&self, key: &str) -> &(Vec<usize>, Vec<i64>) {
        self.ints
            .get(key)
            .unwrap_or_else(|| panic!("{}: no i64 tensor {key}", self.name))
    }

    /// Keys of the f32 tensors starting with `prefix`, sorted, the prefix removed.
    pub fn float_keys(&self, prefix: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .floats
            .keys()
            .filter_map(|k| k.strip_prefix(prefix).map(str::to_owned))
            .collect();
        keys.sort();
        keys
    }

    /// Every key (f32 and i64), sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .floats
            .keys()
            .chain(self.ints.keys())
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    /// The f32 tensor `key` on `device`.
    pub fn tensor<B: Backend, const D: usize>(
        &self,
        key: &str,
        device: &B::Device,
    ) -> Tensor<B, D> {
        let (shape, values) = self.floats(key);
        Tensor::from_data(TensorData::new(values.clone(), shape.clone()), device)
    }

    /// The i64 tensor `key` on `device`, as Burn's int.
    pub fn int_tensor<B: Backend, const D: usize>(
        &self,
        key: &str,
        device: &B::Device,
    ) -> Tensor<B, D, Int> {
        let (shape, values) = self.ints(key);
        Tensor::from_data(TensorData::new(values.clone(), shape.clone()), device)
    }

    /// The metadata's `config`, parsed.
    pub fn config(&self) -> serde_json::Value {
        serde_json::from_str(&self.metadata["config"]).expect("config is JSON")
    }

    /// The ResNet of a torchvision fixture (`block`, `layers`, `width`, `num_classes`).
    pub fn resnet_config(&self) -> ResNetConfig {
        let json = self.config();
        let layers: Vec<usize> = sizes(&json, "layers");
        ResNetConfig {
            block: match json["block"].as_str().unwrap() {
                "basic" => BlockKind::Basic,
                _ => BlockKind::Bottleneck,
            },
            layers: layers.try_into().unwrap(),
            num_classes: size(&json, "num_classes"),
            in_channels: 3,
            base_width: size(&json, "width"),
            small_input_stem: false,
        }
    }

    /// The Swin Transformer of a timm fixture (the `SwinTransformer` kwargs).
    pub fn swin_config(&self) -> SwinConfig {
        let json = self.config();
        let real = |key: &str| json[key].as_f64().unwrap();
        SwinConfig::new(size(&json, "num_classes"))
            .with_img_size(size(&json, "img_size"))
            .with_patch_size(size(&json, "patch_size"))
            .with_in_chans(size(&json, "in_chans"))
            .with_embed_dim(size(&json, "embed_dim"))
            .with_depths(sizes(&json, "depths"))
            .with_num_heads(sizes(&json, "num_heads"))
            .with_window_size(size(&json, "window_size"))
            .with_mlp_ratio(real("mlp_ratio"))
            .with_qkv_bias(json["qkv_bias"].as_bool().unwrap())
            .with_drop_rate(real("drop_rate"))
            .with_proj_drop_rate(real("proj_drop_rate"))
            .with_attn_drop_rate(real("attn_drop_rate"))
            .with_drop_path_rate(real("drop_path_rate"))
    }

    /// The BERT of a transformers fixture (its `BertConfig` kwargs) and its number of labels.
    pub fn bert_config(&self) -> (BertConfig, usize) {
        let json = self.config();
        let real = |key: &str| json[key].as_f64().unwrap();
        let config = BertConfig::new()
            .with_vocab_size(size(&json, "vocab_size"))
            .with_hidden_size(size(&json, "hidden_size"))
            .with_num_hidden_layers(size(&json, "num_hidden_layers"))
            .with_num_attention_heads(size(&json, "num_attention_heads"))
            .with_intermediate_size(size(&json, "intermediate_size"))
            .with_hidden_act(HiddenAct::from_hf_name(json["hidden_act"].as_str().unwrap()).unwrap())
            .with_hidden_dropout_prob(real("hidden_dropout_prob"))
            .with_attention_probs_dropout_prob(real("attention_probs_dropout_prob"))
            .with_max_position_embeddings(size(&json, "max_position_embeddings"))
            .with_type_vocab_size(size(&json, "type_vocab_size"))
            .with_layer_norm_eps(real("layer_norm_eps"));
        (config, size(&json, "num_labels"))
    }

    /// The padded batch of a transformers fixture (`input_ids`, `token_type_ids`,
    /// `attention_mask`): one sample per row, its tokens in segment 1, padding in segment 0.
    pub fn bert_input<B: Backend>(&self, device: &B::Device) -> BertInput<B> {
        let (shape, _) = self.ints("input_ids");
        let [rows, seq] = [shape[0], shape[1]];
        let positions: Vec<i64> = (0..rows).flat_map(|_| 0..seq as i64).collect();
        let cls: Vec<i64> = (0..rows).map(|r| (r * seq) as i64).collect();
        BertInput::new(
            self.int_tensor("input_ids", device),
            self.int_tensor("token_type_ids", device),
            Tensor::from_data(TensorData::new(positions, [rows, seq]), device),
            self.int_tensor("attention_mask", device),
            Tensor::from_data(TensorData::new(cls, [rows]), device),
        )
    }
}

fn size(json: &serde_json::Value, key: &str) -> usize {
    json[key].as_u64().unwrap_or_else(|| panic!("config.{key}")) as usize
}

fn sizes(json: &serde_json::Value, key: &str) -> Vec<usize> {
    json[key]
        .as_array()
        .unwrap_or_else(|| panic!("config.{key}"))
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect()
}

/// `max |got − expected|` over `max(max |expected|, floor)` (1 when both are zero): the error
/// relative to the tensor's scale, as the parity tests bound it. `floor` keeps a tensor that is
/// zero in exact arithmetic (its values are rounding noise) from dividing by that noise.
pub fn relative_error(got: &[f32], expected: &[f32], floor: f64) -> f64 {
    assert_eq!(got.len(), expected.len(), "lengths differ");
    let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64));
    let diff = got
        .iter()
        .zip(expected)
        .fold(0.0f64, |m, (g, e)| m.max((*g as f64 - *e as f64).abs()));
    let scale = scale.max(floor);
    diff / if scale > 0.0 { scale } else { 1.0 }
}
