//! Tier 2: torchvision ResNet weights load into `ResNet` and give torchvision's logits.
//!
//! The fixtures `tests/fixtures/resnet18_w8.safetensors` (BasicBlock, 2-2-2-2, width 8) and
//! `resnet50_w4.safetensors` (Bottleneck, 3-4-6-3, width 4) are recorded by
//! `scripts/record_resnet_fixture.py` from torchvision's own blocks and `_make_layer`, with
//! batch norm's affine parameters and running statistics drawn away from their initial
//! values; each holds the `state_dict`, an input batch and torchvision's eval-mode logits.

use std::path::Path;

use burn::backend::{Flex, Wgpu};
use burn::tensor::backend::Backend;

use burnacc_models::{
    ResNet, ResNetConfig, load_torchvision_resnet, load_torchvision_resnet_backbone,
};

use burnacc_tests::tolerance::PYTORCH_FIXTURE_F32;

use crate::fixture::{Fixture, fixture_path};

const FIXTURES: [&str; 2] = ["resnet18_w8", "resnet50_w4"];

const SCRIPT: &str = "record_resnet_fixture.py";

/// Loads `name` into a fresh model on `B` and compares its eval-mode logits with torchvision's.
fn matches_torchvision<B: Backend>(name: &str, backend: &str) {
    let device = B::Device::default();
    let fixture = Fixture::open(name, SCRIPT);
    let mut model: ResNet<B> = fixture.resnet_config().init(&device);
    let report = load_torchvision_resnet(&mut model, &fixture_path(name)).unwrap();
    assert!(report.missing.is_empty(), "{name}: {:?}", report.missing);
    let mut unused = report.unused.clone();
    unused.retain(|k| !k.ends_with("num_batches_tracked"));
    unused.sort();
    assert_eq!(
        unused,
        ["input", "logits"],
        "{name}: only the fixture's extras are unused"
    );

    let input = fixture.tensor::<B, 4>("input", &device);
    let expected: Vec<f32> = fixture
        .tensor::<B, 2>("logits", &device)
        .into_data()
        .to_vec()
        .unwrap();
    let got: Vec<f32> = model.forward(input).into_data().to_vec().unwrap();
    let scale = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(
            (g - e).abs() <= PYTORCH_FIXTURE_F32 as f32 * scale,
            "{name} on {backend}: logit {i}: {g} vs torchvision {e} (scale {scale})"
        );
    }
}

#[test]
fn torchvision_weights_give_torchvisions_logits_flex() {
    for name in FIXTURES {
        matches_torchvision::<Flex>(name, "Flex");
    }
}

#[test]
fn torchvision_weights_give_torchvisions_logits_wgpu() {
    for name in FIXTURES {
        matches_torchvision::<Wgpu>(name, "wgpu");
    }
}

#[test]
fn the_backbone_loads_without_the_classifier_and_mismatches_are_named() {
    let device = Default::default();
    let fixture = Fixture::open("resnet18_w8", SCRIPT);
    let path = fixture_path("resnet18_w8");
    let mut model: ResNet<Flex> = ResNetConfig {
        num_classes: 4,
        ..fixture.resnet_config()
    }
    .init(&device);
    let report = load_torchvision_resnet_backbone(&mut model, &path).unwrap();
    assert_eq!(report.missing, ["fc.bias", "fc.weight"]);

    // Width 16: every tensor has another shape; the message names the file and a tensor.
    let mut wide: ResNet<Flex> = fixture.resnet_config().with_base_width(16).init(&device);
    let error = load_torchvision_resnet(&mut wide, &path)
        .unwrap_err()
        .to_string();
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(error.contains("conv1.weight"), "{error}");
    // Bottleneck weights into a basic-block model: tensors missing.
    let mut other: ResNet<Flex> = fixture.resnet_config().init(&device);
    let error = load_torchvision_resnet(&mut other, &fixture_path("resnet50_w4"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("ResNet weights"), "{error}");
    let error = load_torchvision_resnet(&mut other, Path::new("/no/such.safetensors"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("/no/such.safetensors") && error.contains("no such file"),
        "{error}"
    );
}
