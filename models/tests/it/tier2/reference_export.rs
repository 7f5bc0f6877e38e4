//! Tier 2: the export writes exactly the reference implementation's `state_dict`.
//!
//! Each fixture holds a model's `state_dict` as torchvision, timm or transformers saved it.
//! Imported here and exported again, every key, shape and value must come back bit for bit
//! (torchvision's `num_batches_tracked` included), and the written file must import into a
//! fresh model that computes the same logits.
//!
//! A model trained here (one SGD step, which also moves batch norm's running statistics) is
//! exported too, with its batch and eval-mode logits beside it; with `BURNACC_EXPORT_DIR=DIR`
//! they are written to `DIR`, where `python3 scripts/check_export.py DIR` loads each file into
//! torchvision / timm / transformers (strictly) and compares the logits there.

use burn::backend::Flex;
use burn::module::{AutodiffModule, Module};
use burnacc_models::bert::load_bert_classifier;
use burnacc_models::swin::load_timm_swin;
use burnacc_models::{
    BertForSequenceClassification, ReferenceData, ReferenceExport, ResNet, SwinTransformer,
    load_torchvision_resnet, reference_state_dict, save_reference,
};
use safetensors::SafeTensors;

use crate::fixture::{Fixture, fixture_path};

type B = Flex;

/// Asserts that `model`'s export is the fixture's `state_dict` (`keys`), bit for bit.
fn exports_the_fixture<M: Module<B> + ReferenceExport>(model: &M, f: &Fixture, keys: &[String]) {
    let exported = reference_state_dict(model, 7).unwrap();
    let exported_keys: Vec<&String> = exported.iter().map(|t| &t.key).collect();
    assert_eq!(
        exported_keys,
        keys.iter().collect::<Vec<_>>(),
        "{}: keys",
        f.name
    );
    for tensor in &exported {
        match &tensor.data {
            ReferenceData::F32(values) => {
                let (shape, expected) = f.floats(&tensor.key);
                assert_eq!(&tensor.shape, shape, "{}: shape of {}", f.name, tensor.key);
                let same = values
                    .iter()
                    .zip(expected)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{}: values of {}", f.name, tensor.key);
            }
            ReferenceData::I64(values) => {
                assert_eq!(values, &f.ints(&tensor.key).1, "{}: {}", f.name, tensor.key);
            }
        }
    }
}

/// The fixture's keys minus the recorded batch and outputs.
fn state_dict_keys(f: &Fixture, recorded: &[&str]) -> Vec<String> {
    let mut keys = f.keys();
    keys.retain(|k| {
        !recorded
            .iter()
            .any(|r| k == r || k.starts_with(&format!("{r}.")))
    });
    keys
}

#[test]
fn torchvision_resnet_exports_its_state_dict() {
    let f = Fixture::open("resnet50_w4", "record_resnet_fixture.py");
    let mut model: ResNet<B> = f.resnet_config().init(&Default::default());
    load_torchvision_resnet(&mut model, &fixture_path(&f.name)).unwrap();
    // The fixture's batch counters are 7, as the export is told here.
    exports_the_fixture(&model, &f, &state_dict_keys(&f, &["input", "logits"]));
}

#[test]
fn timm_swin_exports_its_state_dict() {
    let f = Fixture::open("swin_w7_56px", "record_swin_fixture.py");
    let mut model: SwinTransformer<B> = f.swin_config().init(&Default::default());
    load_timm_swin(&mut model, &fixture_path(&f.name)).unwrap();
    let recorded = ["input", "logits", "stage0", "stage1", "stage2", "stage3"];
    exports_the_fixture(&model, &f, &state_dict_keys(&f, &recorded));
}

#[test]
fn transformers_bert_exports_its_state_dict_and_the_file_loads_back() {
    let f = Fixture::open("grads_bert_base_w24", "record_grad_fixtures.py");
    let device = Default::default();
    let (config, labels) = f.bert_config();
    let mut model = BertForSequenceClassification::<B>::new(&config, labels, &device);
    load_bert_classifier(&mut model, &fixture_path(&f.name)).unwrap();
    let recorded = [
        "input_ids",
        "token_type_ids",
        "attention_mask",
        "labels",
        "logits",
        "loss",
        "bf16",
        "grad",
    ];
    exports_the_fixture(&model, &f, &state_dict_keys(&f, &recorded));

    // Written, the file is safetensors in PyTorch's format, and loads back into a fresh model.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    let written = save_reference(&model, &path, 0, &config.reference_config(labels)).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let metadata = header.metadata().clone().unwrap();
    assert_eq!(metadata["format"], "pt");
    assert_eq!(metadata["library"], "transformers");
    assert_eq!(SafeTensors::deserialize(&bytes).unwrap().len(), written);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no partial file is left beside the export"
    );

    let mut fresh = BertForSequenceClassification::<B>::new(&config, labels, &device);
    let report = load_bert_classifier(&mut fresh, &path).unwrap();
    assert!(
        report.missing.is_empty() && report.unused.is_empty(),
        "{report:?}"
    );
    let input = f.bert_input::<B>(&device);
    let expected: Vec<f32> = model.forward(&input).into_data().to_vec().unwrap();
    let got: Vec<f32> = fresh.forward(&input).into_data().to_vec().unwrap();
    assert_eq!(got, expected);
}

#[test]
fn an_unwritable_export_names_the_file() {
    let f = Fixture::open("resnet18_w8", "record_resnet_fixture.py");
    let model: ResNet<B> = f.resnet_config().init(&Default::default());
    let path = std::path::Path::new("/no/such/folder/model.safetensors");
    let error = save_reference(&model, path, 0, "{}")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("/no/such/folder/model.safetensors"),
        "{error}"
    );
}

/// Where the trained exports go: `BURNACC_EXPORT_DIR`, else a temporary folder.
fn export_dir() -> (std::path::PathBuf, Option<tempfile::TempDir>) {
    match std::env::var_os("BURNACC_EXPORT_DIR") {
        Some(dir) => {
            std::fs::create_dir_all(&dir).unwrap();
            (dir.into(), None)
        }
        None => {
            let temp = tempfile::tempdir().unwrap();
            (temp.path().to_owned(), Some(temp))
        }
    }
}

/// Writes `tensors` (f32 or i64 values with their shapes) as safetensors at `path`.
fn write_io(path: &std::path::Path, tensors: Vec<(&str, Vec<usize>, IoValues)>) {
    use safetensors::tensor::{Dtype, TensorView};
    let bytes: Vec<(Dtype, Vec<u8>)> = tensors
        .iter()
        .map(|(_, _, values)| match values {
            IoValues::F32(v) => (Dtype::F32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            IoValues::I64(v) => (Dtype::I64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        })
        .collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), (dtype, data))| {
            (*name, TensorView::new(*dtype, shape.clone(), data).unwrap())
        });
    safetensors::serialize_to_file(views, None, path).unwrap();
}

enum IoValues {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// Writes the fixture's image batch and the model's `logits` (`[batch, classes]`) at `path`.
fn write_image_io(path: &std::path::Path, f: &Fixture, logits: Vec<f32>) {
    let (shape, input) = f.floats("input").clone();
    let logits_shape = vec![shape[0], logits.len() / shape[0]];
    write_io(
        path,
        vec![
            ("input", shape, IoValues::F32(input)),
            ("logits", logits_shape, IoValues::F32(logits)),
        ],
    );
}

type Ad = burn::backend::Autodiff<B>;

/// One SGD step (lr 0.1) of `model` on the fixture's batch and labels, from `logits`.
fn sgd_step<M: burn::module::AutodiffModule<Ad>>(
    model: M,
    logits: burn::tensor::Tensor<Ad, 2>,
    f: &Fixture,
) -> M {
    use burn::optim::{GradientsParams, Optimizer, SgdConfig};
    let device = logits.device();
    let loss = burn::nn::loss::CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits, f.int_tensor("labels", &device));
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    SgdConfig::new().init().step(0.1, model, grads)
}

#[test]
fn models_trained_here_export_and_reload_with_their_logits() {
    let (dir, _temp) = export_dir();
    let device = Default::default();

    // ResNet: the train step moves the running statistics, which the export carries.
    let f = Fixture::open("grads_resnet50_w4", "record_grad_fixtures.py");
    let config = Fixture::open("resnet50_w4", "record_resnet_fixture.py").resnet_config();
    let mut model: ResNet<Ad> = config.init(&device);
    load_torchvision_resnet(&mut model, &fixture_path("resnet50_w4")).unwrap();
    let logits = model.forward(f.tensor("input", &device));
    let trained = sgd_step(model, logits, &f).valid();
    let path = dir.join("resnet50_w4.safetensors");
    save_reference(&trained, &path, 1, &config.reference_config()).unwrap();
    let input = f.tensor::<B, 4>("input", &device);
    let expected: Vec<f32> = trained.forward(input.clone()).into_data().to_vec().unwrap();
    let mut reloaded: ResNet<B> = config.init(&device);
    load_torchvision_resnet(&mut reloaded, &path).unwrap();
    let got: Vec<f32> = reloaded.forward(input).into_data().to_vec().unwrap();
    assert_eq!(
        got, expected,
        "the ResNet export reloads to the same eval logits"
    );
    write_image_io(&dir.join("resnet50_w4.io.safetensors"), &f, expected);

    // Swin.
    let f = Fixture::open("grads_swin_w7_56px", "record_grad_fixtures.py");
    let config = f.swin_config();
    let mut model: SwinTransformer<Ad> = config.init(&device);
    load_timm_swin(&mut model, &fixture_path("swin_w7_56px")).unwrap();
    let logits = model.forward(f.tensor("input", &device));
    let trained = sgd_step(model, logits, &f).valid();
    let path = dir.join("swin_w7_56px.safetensors");
    save_reference(&trained, &path, 1, &config.reference_config()).unwrap();
    let input = f.tensor::<B, 4>("input", &device);
    let expected: Vec<f32> = trained.forward(input.clone()).into_data().to_vec().unwrap();
    let mut reloaded: SwinTransformer<B> = config.init(&device);
    load_timm_swin(&mut reloaded, &path).unwrap();
    let got: Vec<f32> = reloaded.forward(input).into_data().to_vec().unwrap();
    assert_eq!(got, expected, "the Swin export reloads to the same logits");
    write_image_io(&dir.join("swin_w7_56px.io.safetensors"), &f, expected);

    // BERT.
    let f = Fixture::open("grads_bert_base_w24", "record_grad_fixtures.py");
    let (config, labels) = f.bert_config();
    let mut model = BertForSequenceClassification::<Ad>::new(&config, labels, &device);
    load_bert_classifier(&mut model, &fixture_path(&f.name)).unwrap();
    let logits = model.forward(&f.bert_input(&device));
    let trained = sgd_step(model, logits, &f).valid();
    let path = dir.join("bert_base_w24.safetensors");
    save_reference(&trained, &path, 1, &config.reference_config(labels)).unwrap();
    let input = f.bert_input::<B>(&device);
    let expected: Vec<f32> = trained.forward(&input).into_data().to_vec().unwrap();
    let mut reloaded = BertForSequenceClassification::<B>::new(&config, labels, &device);
    load_bert_classifier(&mut reloaded, &path).unwrap();
    let got: Vec<f32> = reloaded.forward(&input).into_data().to_vec().unwrap();
    assert_eq!(got, expected, "the BERT export reloads to the same logits");
    let ints = |key: &str| {
        let (shape, values) = f.ints(key).clone();
        (shape, IoValues::I64(values))
    };
    let (ids_shape, ids) = ints("input_ids");
    let (types_shape, types) = ints("token_type_ids");
    let (mask_shape, mask) = ints("attention_mask");
    write_io(
        &dir.join("bert_base_w24.io.safetensors"),
        vec![
            ("input_ids", ids_shape.clone(), ids),
            ("token_type_ids", types_shape, types),
            ("attention_mask", mask_shape, mask),
            (
                "logits",
                vec![ids_shape[0], labels],
                IoValues::F32(expected),
            ),
        ],
    );
}
