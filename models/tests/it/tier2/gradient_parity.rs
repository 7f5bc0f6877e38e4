//! Tier 2: one training step of each reference model against its reference implementation:
//! logits, loss, the gradient of every parameter and (ResNet) batch norm's running statistics
//! after a train-mode forward pass, on Flex and on wgpu, within 1e-4 of the tensor's scale.
//!
//! The fixtures `grads_*.safetensors` are recorded by `scripts/record_grad_fixtures.py` with
//! torchvision (ResNet-50 structure at width 4, train mode, batch 4 of 64 px), timm (Swin-T
//! layout at width 8) and transformers (`BertForSequenceClassification` with BERT-base's and
//! BERT-large's structure at widths 24 and 16, padded rows, segments A/B), f32 on the CPU.
//! Gradients are compared under the reference's keys and layouts, through the same mapping the
//! export uses ([`reference_state_dict`]), so a misnamed or mis-transposed tensor fails too.
//!
//! The references are computed in float64 (the exact answer an f32 implementation
//! approximates). Against them PyTorch's own float32 gradients are off by up to 3.1e-4 of a
//! tensor's scale on the ResNet (train-mode batch norm over few channels, ReLU kinks), 2.1e-4 on
//! BERT-large's structure at width 16, 4.9e-5 on BERT-base's and 1.3e-6 on Swin (the fixture's
//! `stats`). A gradient passes within [`PYTORCH_FIXTURE_F32`] or within twice PyTorch's own
//! error, whichever is larger. Gradients below [`GRADIENT_SCALE_FLOOR`] (1e-3) of the model's
//! largest are compared against that floor: BERT's key bias has a zero gradient in exact
//! arithmetic (softmax ignores a constant added to every score), so its values are rounding
//! noise.

use burn::backend::{Autodiff, Flex, Wgpu};
use burn::module::{AutodiffModule, Module, ModuleMapper, Param};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor};
use burnacc_models::bert::load_bert_classifier;
use burnacc_models::swin::load_timm_swin;
use burnacc_models::{
    BertForSequenceClassification, ReferenceData, ReferenceExport, ResNet, SwinTransformer,
    load_torchvision_resnet, reference_state_dict,
};

use burnacc_tests::tolerance::{GRADIENT_SCALE_FLOOR, PYTORCH_FIXTURE_F32};

use crate::fixture::{Fixture, fixture_path, relative_error};

const SCRIPT: &str = "record_grad_fixtures.py";

/// The reference's `state_dict` of `model` as `(key, f32 values)`, i64 counters left out.
fn float_state<B: burn::tensor::backend::Backend, M: Module<B> + ReferenceExport>(
    model: &M,
) -> Vec<(String, Vec<f32>)> {
    reference_state_dict(model, 0)
        .unwrap()
        .into_iter()
        .filter_map(|t| match t.data {
            ReferenceData::F32(v) => Some((t.key, v)),
            ReferenceData::I64(_) => None,
        })
        .collect()
}

/// Replaces every parameter of a module by its gradient (zeros where it has none).
struct GradientsOf<'a> {
    grads: &'a GradientsParams,
}

impl<B: burn::tensor::backend::Backend> ModuleMapper<B> for GradientsOf<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let grad = self
            .grads
            .get::<B, D>(id)
            .unwrap_or_else(|| tensor.zeros_like());
        Param::from_mapped_value(id, grad, mapper)
    }
}

fn is_statistic(key: &str) -> bool {
    key.ends_with(".running_mean") || key.ends_with(".running_var")
}

/// Compares the step of `model` (whose forward pass gave `logits`) with the fixture's.
fn check_step<B, M>(f: &Fixture, model: &M, logits: Tensor<B, 2>, backend: &str)
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    M::InnerModule: ReferenceExport,
{
    let name = format!("{} on {backend}", f.name);
    let device = logits.device();
    let labels: Tensor<B, 1, Int> = f.int_tensor("labels", &device);
    let loss = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits.clone(), labels);
    let close = |what: &str, got: &[f32], expected: &[f32]| {
        let error = relative_error(got, expected, 0.0);
        assert!(
            error <= PYTORCH_FIXTURE_F32,
            "{name}: {what}: relative error {error:.2e}"
        );
    };
    close(
        "logits",
        &logits.to_data().to_vec::<f32>().unwrap(),
        &f.floats("logits").1,
    );
    close(
        "loss",
        &loss.to_data().to_vec::<f32>().unwrap(),
        &f.floats("loss").1,
    );

    let grads = GradientsParams::from_grads(loss.backward(), model);
    let gradients = model.valid().map(&mut GradientsOf { grads: &grads });
    let ours: Vec<(String, Vec<f32>)> = float_state(&gradients)
        .into_iter()
        .filter(|(key, _)| !is_statistic(key))
        .collect();
    let keys: Vec<&String> = ours.iter().map(|(k, _)| k).collect();
    let expected_keys = f.float_keys("grad.");
    assert_eq!(
        keys,
        expected_keys.iter().collect::<Vec<_>>(),
        "{name}: the parameters with a gradient"
    );
    let expected = |key: &str| &f.floats(&format!("grad.{key}")).1;
    let largest = ours
        .iter()
        .flat_map(|(key, _)| expected(key).iter())
        .fold(0.0f64, |m, v| m.max(v.abs() as f64));
    let mut errors: Vec<(f64, &String)> = ours
        .iter()
        .map(|(key, got)| {
            let error = relative_error(got, expected(key), GRADIENT_SCALE_FLOOR * largest);
            (error, key)
        })
        .collect();
    errors.sort_by(|a, b| b.0.total_cmp(&a.0));
    let stats: serde_json::Value = serde_json::from_str(&f.metadata["stats"]).unwrap();
    let torch_error = stats["torch_f32_error"].as_f64().unwrap();
    let bound = PYTORCH_FIXTURE_F32.max(2.0 * torch_error);
    eprintln!(
        "{name}: {} gradients, worst {:.2e} ({}); PyTorch f32: {torch_error:.2e}; bound {bound:.2e}",
        ours.len(),
        errors[0].0,
        errors[0].1
    );
    let failing: Vec<_> = errors.iter().filter(|(e, _)| *e > bound).collect();
    assert!(failing.is_empty(), "{name}: gradients off: {failing:?}");

    let statistics = f.float_keys("running.");
    let state = float_state(&model.valid());
    for (key, got) in &state {
        if statistics.contains(key) {
            close(
                &format!("{key} after the step"),
                got,
                &f.floats(&format!("running.{key}")).1,
            );
        }
    }
    if !statistics.is_empty() {
        let updated = state.iter().filter(|(k, _)| is_statistic(k)).count();
        assert_eq!(
            updated,
            statistics.len(),
            "{name}: running statistics compared"
        );
    }
}

fn resnet_step<B: AutodiffBackend>(backend: &str) {
    let f = Fixture::open("grads_resnet50_w4", SCRIPT);
    let device = B::Device::default();
    let mut model: ResNet<B> = Fixture::open("resnet50_w4", "record_resnet_fixture.py")
        .resnet_config()
        .init(&device);
    load_torchvision_resnet(&mut model, &fixture_path("resnet50_w4")).unwrap();
    let logits = model.forward(f.tensor("input", &device));
    check_step(&f, &model, logits, backend);
}

fn swin_step<B: AutodiffBackend>(backend: &str) {
    let f = Fixture::open("grads_swin_w7_56px", SCRIPT);
    let device = B::Device::default();
    let mut model: SwinTransformer<B> = f.swin_config().init(&device);
    load_timm_swin(&mut model, &fixture_path("swin_w7_56px")).unwrap();
    let logits = model.forward(f.tensor("input", &device));
    check_step(&f, &model, logits, backend);
}

fn bert_step<B: AutodiffBackend>(name: &str, backend: &str) {
    let f = Fixture::open(name, SCRIPT);
    let device = B::Device::default();
    let (config, num_labels) = f.bert_config();
    let mut model = BertForSequenceClassification::<B>::new(&config, num_labels, &device);
    let report = load_bert_classifier(&mut model, &fixture_path(name)).unwrap();
    assert!(report.missing.is_empty(), "{name}: {:?}", report.missing);
    let logits = model.forward(&f.bert_input(&device));
    check_step(&f, &model, logits, backend);
}

#[test]
fn resnet50_train_step_matches_torchvision_flex() {
    resnet_step::<Autodiff<Flex>>("Flex");
}

#[test]
fn resnet50_train_step_matches_torchvision_wgpu() {
    resnet_step::<Autodiff<Wgpu>>("wgpu");
}

#[test]
fn swin_t_train_step_matches_timm_flex() {
    swin_step::<Autodiff<Flex>>("Flex");
}

#[test]
fn swin_t_train_step_matches_timm_wgpu() {
    swin_step::<Autodiff<Wgpu>>("wgpu");
}

#[test]
fn bert_base_and_large_train_steps_match_transformers_flex() {
    for name in ["grads_bert_base_w24", "grads_bert_large_w16"] {
        bert_step::<Autodiff<Flex>>(name, "Flex");
    }
}

#[test]
fn bert_base_and_large_train_steps_match_transformers_wgpu() {
    for name in ["grads_bert_base_w24", "grads_bert_large_w16"] {
        bert_step::<Autodiff<Wgpu>>(name, "wgpu");
    }
}
