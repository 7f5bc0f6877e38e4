//! Tier 2: `torch.save` checkpoints import like safetensors ones.
//!
//! `tests/fixtures/swin_w4_36px.pth` (a zip-format training checkpoint, the state dict under
//! `state_dict`) and `bert_base_w24.bin` (a legacy pickle, transformers' keys) hold the weights
//! of two safetensors fixtures (`scripts/record_pth_fixtures.py`); loaded through burn-store's
//! PyTorch reader, the models must compute the same logits as from the safetensors files.

use burn::backend::Flex;
use burnacc_models::bert::load_bert_classifier;
use burnacc_models::swin::{load_timm_swin, load_timm_swin_backbone};
use burnacc_models::{
    BertForSequenceClassification, CheckpointFormat, SwinTransformer, checkpoint_tensor_shape,
};

use crate::fixture::{Fixture, fixture_file, fixture_path};

type B = Flex;

fn pickle(name: &str) -> std::path::PathBuf {
    let path = fixture_file(name);
    assert!(
        path.is_file(),
        "{}: record it with python3 scripts/record_pth_fixtures.py",
        path.display()
    );
    path
}

#[test]
fn a_zip_training_checkpoint_imports_like_its_safetensors() {
    let f = Fixture::open("swin_w4_36px", "record_swin_fixture.py");
    let pth = pickle("swin_w4_36px.pth");
    assert_eq!(
        CheckpointFormat::of(&pth).unwrap(),
        CheckpointFormat::Pickle
    );
    let device = Default::default();
    let mut from_pth: SwinTransformer<B> = f.swin_config().init(&device);
    let report = load_timm_swin(&mut from_pth, &pth).unwrap();
    assert!(report.missing.is_empty(), "{report:?}");
    let mut from_safetensors: SwinTransformer<B> = f.swin_config().init(&device);
    load_timm_swin(&mut from_safetensors, &fixture_path(&f.name)).unwrap();
    let input = f.tensor::<B, 4>("input", &device);
    let got: Vec<f32> = from_pth
        .forward(input.clone())
        .into_data()
        .to_vec()
        .unwrap();
    let expected: Vec<f32> = from_safetensors
        .forward(input)
        .into_data()
        .to_vec()
        .unwrap();
    assert_eq!(got, expected);

    // The classifier's shape is read from the pickle's index (what a recipe's import checks).
    let classes = f.swin_config().num_classes;
    let shape = checkpoint_tensor_shape(&pth, "head.fc.weight").unwrap();
    assert_eq!(shape.as_deref(), Some(&[classes, 64][..]));
    // A backbone import leaves the classifier out.
    let mut backbone: SwinTransformer<B> = f.swin_config().init(&device);
    let report = load_timm_swin_backbone(&mut backbone, &pth).unwrap();
    assert_eq!(report.missing, ["head.fc.bias", "head.fc.weight"]);
}

#[test]
fn a_legacy_pytorch_model_bin_imports_like_its_safetensors() {
    let f = Fixture::open("grads_bert_base_w24", "record_grad_fixtures.py");
    let bin = pickle("bert_base_w24.bin");
    assert_eq!(
        CheckpointFormat::of(&bin).unwrap(),
        CheckpointFormat::Pickle
    );
    let device = Default::default();
    let (config, labels) = f.bert_config();
    let mut from_bin = BertForSequenceClassification::<B>::new(&config, labels, &device);
    let report = load_bert_classifier(&mut from_bin, &bin).unwrap();
    assert!(report.missing.is_empty(), "{report:?}");
    let mut from_safetensors = BertForSequenceClassification::<B>::new(&config, labels, &device);
    load_bert_classifier(&mut from_safetensors, &fixture_path(&f.name)).unwrap();
    let input = f.bert_input::<B>(&device);
    let got: Vec<f32> = from_bin.forward(&input).into_data().to_vec().unwrap();
    let expected: Vec<f32> = from_safetensors
        .forward(&input)
        .into_data()
        .to_vec()
        .unwrap();
    assert_eq!(got, expected);
}

#[test]
fn a_pickle_that_does_not_fit_is_refused_naming_the_file_and_tensor() {
    let f = Fixture::open("swin_w4_36px", "record_swin_fixture.py");
    let pth = pickle("swin_w4_36px.pth");
    let mut wider: SwinTransformer<B> =
        f.swin_config().with_embed_dim(16).init(&Default::default());
    let error = load_timm_swin(&mut wider, &pth).unwrap_err().to_string();
    assert!(error.contains("swin_w4_36px.pth"), "{error}");
    assert!(error.contains("patch_embed.proj.weight"), "{error}");
}
