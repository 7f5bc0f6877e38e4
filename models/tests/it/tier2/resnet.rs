//! ResNet: parameter counts and names against torchvision, shapes, block decomposition,
//! initialisation statistics and one backward pass, on the Flex CPU backend.

use burn::backend::{Autodiff, Flex};
use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Distribution, Int, Tensor};
use burnacc_models::{BlockKind, ResNetConfig, named_tensors, num_trainable_params, torch_key};

type B = Flex;
type AB = Autodiff<Flex>;

fn device() -> burn::tensor::Device<B> {
    Default::default()
}

fn max_abs_diff<const D: usize>(a: Tensor<B, D>, b: Tensor<B, D>) -> f32 {
    a.sub(b).abs().max().into_scalar()
}

/// torchvision's `sum(p.numel() for p in model.parameters())` at 1000 classes.
#[test]
fn trainable_parameter_counts_match_torchvision() {
    let cases = [
        ("resnet18", 11_689_512),
        ("resnet34", 21_797_672),
        ("resnet50", 25_557_032),
        ("resnet101", 44_549_160),
        ("resnet152", 60_192_808),
    ];
    for (name, expected) in cases {
        let model = ResNetConfig::from_name(name, 1000)
            .unwrap()
            .init::<B>(&device());
        assert_eq!(num_trainable_params(&model), expected, "{name}");
    }
}

/// Burn's `num_params` also counts BN running statistics (`RunningState` is visited like a
/// parameter): for ResNet-50 that is 2 × 26,560 BN channels on top of torchvision's figure.
#[test]
fn burn_num_params_counts_running_statistics_too() {
    let model = ResNetConfig::resnet50(1000).init::<B>(&device());
    let running: usize = named_tensors(&model)
        .iter()
        .filter(|t| !t.trainable)
        .map(|t| t.num_elements())
        .sum();
    assert_eq!(running, 2 * 26_560);
    assert_eq!(model.num_params(), 25_557_032 + running);
}

/// torchvision's resnet50 `state_dict` keys without running statistics, built from its
/// `_make_layer` structure.
fn torchvision_resnet50_trainable_keys() -> Vec<String> {
    let mut keys = vec![
        "conv1.weight".to_string(),
        "bn1.weight".into(),
        "bn1.bias".into(),
    ];
    for (stage, blocks) in [3, 4, 6, 3].into_iter().enumerate() {
        for i in 0..blocks {
            let p = format!("layer{}.{i}", stage + 1);
            for j in 1..=3 {
                keys.push(format!("{p}.conv{j}.weight"));
                keys.push(format!("{p}.bn{j}.weight"));
                keys.push(format!("{p}.bn{j}.bias"));
            }
            if i == 0 {
                keys.push(format!("{p}.downsample.0.weight"));
                keys.push(format!("{p}.downsample.1.weight"));
                keys.push(format!("{p}.downsample.1.bias"));
            }
        }
    }
    keys.push("fc.weight".into());
    keys.push("fc.bias".into());
    keys
}

#[test]
fn resnet50_parameter_names_map_to_torchvision() {
    let model = ResNetConfig::resnet50(1000).init::<B>(&device());
    let tensors = named_tensors(&model);
    let keys: Vec<String> = tensors
        .iter()
        .filter(|t| t.trainable)
        .map(|t| torch_key(&t.path))
        .collect();

    assert_eq!(keys.len(), 161);
    let first = [
        "conv1.weight",
        "bn1.weight",
        "bn1.bias",
        "layer1.0.conv1.weight",
        "layer1.0.bn1.weight",
        "layer1.0.bn1.bias",
        "layer1.0.conv2.weight",
    ];
    assert_eq!(keys[..first.len()], first);
    let last = [
        "layer4.2.conv3.weight",
        "layer4.2.bn3.weight",
        "layer4.2.bn3.bias",
        "fc.weight",
        "fc.bias",
    ];
    assert_eq!(keys[keys.len() - last.len()..], last);
    assert!(keys.contains(&"layer1.0.downsample.0.weight".to_string()));
    assert!(keys.contains(&"layer3.0.downsample.1.bias".to_string()));
    assert_eq!(keys, torchvision_resnet50_trainable_keys());

    // With running statistics: torchvision's state_dict minus the 53 `num_batches_tracked`.
    assert_eq!(tensors.len(), 161 + 2 * 53);
    let shape = |path: &str| {
        tensors
            .iter()
            .find(|t| t.path == path)
            .unwrap_or_else(|| panic!("no tensor at {path}"))
            .shape
            .clone()
    };
    assert_eq!(shape("conv1.weight"), [64, 3, 7, 7]);
    assert_eq!(shape("bn1.running_var"), [64]);
    assert_eq!(shape("layer1.0.downsample.0.weight"), [256, 64, 1, 1]);
    assert_eq!(shape("layer2.0.conv2.weight"), [128, 128, 3, 3]);
    // Burn's Linear stores [d_input, d_output]: the transpose of torchvision's [1000, 2048].
    assert_eq!(shape("fc.weight"), [2048, 1000]);
}

/// ResNet v1.5: the bottleneck's stride sits on conv2, the shortcut conv has the same stride.
#[test]
fn bottleneck_stride_is_on_conv2() {
    let model = ResNetConfig::resnet50(10).init::<B>(&device());
    for layer in &model.layers()[1..] {
        let block = &layer[0];
        assert!(block.is_bottleneck());
        assert_eq!(block.conv1.stride, [1, 1]);
        assert_eq!(block.conv2.stride, [2, 2]);
        assert_eq!(block.downsample.as_ref().unwrap().0.stride, [2, 2]);
    }
    assert!(model.layer1[1].downsample.is_none());
    let basic = ResNetConfig::resnet18(10).init::<B>(&device());
    assert!(!basic.layer2[0].is_bottleneck());
    assert_eq!(basic.layer2[0].conv1.stride, [2, 2]);
    assert!(basic.layer1[0].downsample.is_none());
}

#[test]
fn resnet50_224_shapes() {
    let model = ResNetConfig::resnet50(1000).init::<B>(&device());
    let x = Tensor::<B, 4>::random([1, 3, 224, 224], Distribution::Default, &device());
    let stem = model.stem(x.clone());
    assert_eq!(stem.dims(), [1, 64, 56, 56]);
    let mut h = stem;
    let mut stage_shapes = Vec::new();
    for layer in model.layers() {
        h = layer.iter().fold(h, |h, block| block.forward(h));
        stage_shapes.push(h.dims());
    }
    assert_eq!(
        stage_shapes,
        [
            [1, 256, 56, 56],
            [1, 512, 28, 28],
            [1, 1024, 14, 14],
            [1, 2048, 7, 7]
        ]
    );
    let logits = model.forward(x);
    assert_eq!(logits.dims(), [1, 1000]);
    assert!(logits.is_finite().all().into_scalar());
}

#[test]
fn small_stem_grey_28px_shapes() {
    let config = ResNetConfig::resnet18(10)
        .with_in_channels(1)
        .with_base_width(16)
        .with_small_input_stem(true);
    let model = config.init::<B>(&device());
    assert!(model.maxpool.is_none());
    assert_eq!(model.conv1.weight.dims(), [16, 1, 3, 3]);
    let x = Tensor::<B, 4>::random([2, 1, 28, 28], Distribution::Default, &device());
    assert_eq!(model.stem(x.clone()).dims(), [2, 16, 28, 28]);
    let features = model
        .blocks()
        .fold(model.stem(x.clone()), |h, b| b.forward(h));
    assert_eq!(features.dims(), [2, 128, 4, 4]);
    assert_eq!(model.forward(x).dims(), [2, 10]);

    let bottleneck = ResNetConfig::resnet50(10)
        .with_in_channels(1)
        .with_base_width(8)
        .with_small_input_stem(true);
    assert_eq!(bottleneck.num_features(), 8 * 8 * 4);
    let model = bottleneck.init::<B>(&device());
    let x = Tensor::<B, 4>::random([2, 1, 28, 28], Distribution::Default, &device());
    assert_eq!(model.forward(x).dims(), [2, 10]);
}

#[test]
fn blocks_compose_to_forward() {
    for block in [BlockKind::Basic, BlockKind::Bottleneck] {
        let model = ResNetConfig::new(block, [1, 2, 1, 1], 7)
            .with_base_width(8)
            .init::<B>(&device());
        let x = Tensor::<B, 4>::random([2, 3, 64, 64], Distribution::Default, &device());
        let composed = model.head(
            model
                .blocks()
                .fold(model.stem(x.clone()), |h, b| b.forward(h)),
        );
        let direct = model.forward(x);
        assert_eq!(direct.dims(), [2, 7]);
        assert_eq!(max_abs_diff(direct, composed), 0.0, "{block:?}");
    }
}

#[test]
fn initialisation_matches_torchvision() {
    let model = ResNetConfig::resnet18(10).init::<B>(&device());
    // kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / (512 * 3 * 3)).
    let w = model.layer4[1].conv1.weight.val();
    let mean = w.clone().mean().into_scalar();
    let std = w.sub_scalar(mean).square().mean().sqrt().into_scalar();
    let expected = (2.0f32 / (512.0 * 9.0)).sqrt();
    assert!(mean.abs() < 1e-3 * expected.max(1.0), "mean {mean}");
    assert!(
        (std / expected - 1.0).abs() < 0.02,
        "std {std}, expected {expected}"
    );
    assert!(model.conv1.bias.is_none());

    let bn = &model.layer4[1].bn2;
    assert_eq!(bn.gamma.val().min().into_scalar(), 1.0);
    assert_eq!(bn.gamma.val().max().into_scalar(), 1.0);
    assert_eq!(bn.beta.val().abs().max().into_scalar(), 0.0);
    assert_eq!(bn.epsilon, 1e-5);
    assert_eq!(bn.momentum, 0.1);

    // nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    let bound = 1.0 / (512.0f32).sqrt();
    assert!(model.fc.weight.val().abs().max().into_scalar() <= bound);
    assert!(
        model
            .fc
            .bias
            .as_ref()
            .unwrap()
            .val()
            .abs()
            .max()
            .into_scalar()
            <= bound
    );
}

#[test]
fn from_name_and_serialisation() {
    let config = ResNetConfig::from_name("resnet101", 5).unwrap();
    assert_eq!(config.block, BlockKind::Bottleneck);
    assert_eq!(config.layers, [3, 4, 23, 3]);

    let err = ResNetConfig::from_name("resnet51", 5).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("resnet51"), "{message}");
    for name in ResNetConfig::NAMES {
        assert!(message.contains(name), "{message}");
    }

    let config = ResNetConfig::resnet34(100)
        .with_in_channels(1)
        .with_small_input_stem(true);
    let json = burn::config::config_to_json(&config);
    let back = <ResNetConfig as burn::config::Config>::load_binary(json.as_bytes()).unwrap();
    assert_eq!(burn::config::config_to_json(&back), json);
    assert!(back.small_input_stem && back.in_channels == 1 && back.base_width == 64);
}

/// Checks that every trainable parameter received a finite gradient.
struct GradientCheck<'a> {
    grads: &'a <AB as burn::tensor::backend::AutodiffBackend>::Gradients,
    path: Vec<String>,
    checked: usize,
}

impl ModuleVisitor<AB> for GradientCheck<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        let path = self.path.join(".");
        if path.ends_with("running_mean") || path.ends_with("running_var") {
            return;
        }
        let grad = param
            .val()
            .grad(self.grads)
            .unwrap_or_else(|| panic!("no gradient for {path}"));
        assert!(
            grad.is_finite().all().into_scalar(),
            "non-finite gradient for {path}"
        );
        self.checked += 1;
    }
}

#[test]
fn tiny_training_step_has_finite_gradients_everywhere() {
    let device = device();
    let model = ResNetConfig::resnet18(10)
        .with_in_channels(1)
        .with_base_width(8)
        .with_small_input_stem(true)
        .init::<AB>(&device);
    let x = Tensor::<AB, 4>::random([4, 1, 8, 8], Distribution::Default, &device);
    let targets = Tensor::<AB, 1, Int>::from_ints([0, 3, 7, 9], &device);
    let logits = model.forward(x);
    let loss = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits, targets);
    assert!(loss.clone().into_scalar().is_finite());
    let grads = loss.backward();

    let mut check = GradientCheck {
        grads: &grads,
        path: Vec::new(),
        checked: 0,
    };
    model.visit(&mut check);
    let expected = named_tensors(&model).iter().filter(|t| t.trainable).count();
    assert_eq!(check.checked, expected);
    assert_eq!(expected, 62); // torchvision resnet18: 62 trainable tensors
}
