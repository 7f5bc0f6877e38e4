//! The imported all-MiniLM-L6-v2 reproduces PyTorch + transformers.
//!
//! The fixture (`tests/fixtures/minilm_l6_hidden.safetensors`, written by
//! `scripts/record_minilm_fixture.py` with transformers' `BertModel`, f32, eager attention)
//! holds five sentences padded to 29 tokens, their `last_hidden_state` and `pooler_output`.
//! The weights are fetched by `scripts/fetch_text_data.sh`; without them the test says so and
//! passes without checking.

use burn::backend::Flex;
use burn::backend::flex::FlexDevice;
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_datasets::text::{MiniLmFiles, fetched_or_skip, minilm_present, text_data_dir};
use burnacc_models::bert::{BertConfig, BertInput, BertModel, load_bert_model};
use burnacc_tests::tolerance::PYTORCH_FIXTURE_F32;
use safetensors::SafeTensors;
use safetensors::tensor::Dtype;
use std::path::PathBuf;

type B = Flex;

struct Fixture {
    input_ids: Vec<i64>,
    attention_mask: Vec<i64>,
    shape: [usize; 2],
    last_hidden_state: Vec<f32>,
    pooler_output: Vec<f32>,
}

fn fixture() -> Fixture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/minilm_l6_hidden.safetensors");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = SafeTensors::deserialize(&bytes).expect("the fixture is safetensors");
    let ints = |name: &str| {
        let t = file.tensor(name).unwrap();
        assert_eq!(t.dtype(), Dtype::I64, "{name}");
        (
            t.data()
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                .collect::<Vec<_>>(),
            t.shape().to_vec(),
        )
    };
    let floats = |name: &str| {
        let t = file.tensor(name).unwrap();
        assert_eq!(t.dtype(), Dtype::F32, "{name}");
        t.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect::<Vec<_>>()
    };
    let (input_ids, shape) = ints("input_ids");
    Fixture {
        input_ids,
        attention_mask: ints("attention_mask").0,
        shape: [shape[0], shape[1]],
        last_hidden_state: floats("last_hidden_state"),
        pooler_output: floats("pooler_output"),
    }
}

/// The fixture's padded batch as a [`BertInput`]: one sample per row, segment 1 on real tokens.
fn input(f: &Fixture) -> BertInput<B> {
    let [rows, seq] = f.shape;
    let ints = |values: Vec<i64>| {
        Tensor::<B, 2, Int>::from_data(TensorData::new(values, f.shape), &FlexDevice)
    };
    let positions = (0..rows).flat_map(|_| 0..seq as i64).collect();
    let cls = (0..rows).map(|r| (r * seq) as i64).collect::<Vec<_>>();
    BertInput::new(
        ints(f.input_ids.clone()),
        ints(vec![0; rows * seq]),
        ints(positions),
        ints(f.attention_mask.clone()),
        Tensor::from_data(TensorData::new(cls, [rows]), &FlexDevice),
    )
}

fn max_abs(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |m, v| m.max(v.abs()))
}

#[test]
fn imported_minilm_matches_transformers_on_real_tokens() {
    let dir = text_data_dir();
    if !fetched_or_skip(minilm_present(&dir), "all-MiniLM-L6-v2", &dir) {
        return;
    }
    let files = MiniLmFiles::open(&dir).expect("published MiniLM files");
    let config = BertConfig::from_hf_json(&files.config).unwrap();
    assert_eq!(config.hidden_size, BertConfig::minilm_l6().hidden_size);
    let mut model = BertModel::<B>::new(&config, &FlexDevice);
    let report = load_bert_model(&mut model, &files.weights).unwrap();
    // 6 layers × 16 + 5 embedding tensors + 2 pooler tensors; position_ids is a buffer.
    assert_eq!(report.applied, 103, "{report:?}");
    assert!(report.missing.is_empty(), "{report:?}");
    assert_eq!(report.unused, vec!["embeddings.position_ids".to_string()]);

    let f = fixture();
    let input = input(&f);
    let hidden = model.last_hidden_state(&input);
    let pooled = model.pool(hidden.clone(), &input);
    let got: Vec<f32> = hidden.into_data().to_vec().unwrap();
    let width = config.hidden_size;
    let real: Vec<usize> = (0..f.attention_mask.len())
        .filter(|&i| f.attention_mask[i] == 1)
        .collect();
    let diff = max_abs(
        real.iter()
            .flat_map(|&t| (0..width).map(move |c| t * width + c))
            .map(|i| got[i] as f64 - f.last_hidden_state[i] as f64),
    );
    let scale = max_abs(
        real.iter()
            .flat_map(|&t| (0..width).map(move |c| t * width + c))
            .map(|i| f.last_hidden_state[i] as f64),
    );
    eprintln!(
        "last_hidden_state: max |diff| {diff:.3e}, max |ref| {scale:.3}, {} real tokens",
        real.len()
    );
    assert!(
        diff <= PYTORCH_FIXTURE_F32 * scale,
        "max |diff| {diff} > {PYTORCH_FIXTURE_F32} × {scale}"
    );

    let got: Vec<f32> = pooled.into_data().to_vec().unwrap();
    let diff = max_abs(
        got.iter()
            .zip(&f.pooler_output)
            .map(|(a, b)| *a as f64 - *b as f64),
    );
    let scale = max_abs(f.pooler_output.iter().map(|v| *v as f64));
    eprintln!("pooler_output: max |diff| {diff:.3e}, max |ref| {scale:.3}");
    assert!(
        diff <= PYTORCH_FIXTURE_F32 * scale,
        "pooler max |diff| {diff} > {PYTORCH_FIXTURE_F32} × {scale}"
    );
}

#[test]
fn a_corrupted_weights_file_is_named_in_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bad = dir.join("model.safetensors");
    std::fs::write(&bad, b"not a safetensors file").unwrap();
    let mut model = BertModel::<B>::new(
        &BertConfig::minilm_l6().with_num_hidden_layers(1),
        &FlexDevice,
    );
    let err = load_bert_model(&mut model, &bad).unwrap_err().to_string();
    assert!(err.contains(&bad.display().to_string()), "{err}");
    let missing = dir.join("absent.safetensors");
    let err = load_bert_model(&mut model, &missing)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("absent.safetensors") && err.contains("no such file"),
        "{err}"
    );
}
