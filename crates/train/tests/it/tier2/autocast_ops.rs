//! Tier 2: under autocast every convolution and linear layer of ResNet-50 runs in half
//! precision (counted by `Acc`), the ops of the f32 list run in f32, and parameters still get
//! f32 gradients.

use burn::backend::flex::FlexDevice;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{DType, Distribution, FloatDType, Int, Tensor, TensorData};
use burnacc_amp::policy::{FLOAT32_OPS, LOWER_PRECISION_OPS};
use burnacc_backend::autocast::autocast;
use burnacc_backend::counters;
use burnacc_models::ResNetConfig;
use burnacc_train::stack::CpuAccBackend;

type B = CpuAccBackend;

#[test]
fn every_conv_and_linear_of_resnet50_runs_in_half() {
    for dtype in [FloatDType::BF16, FloatDType::F16] {
        let device = FlexDevice;
        let model = ResNetConfig::resnet50(10).init::<B>(&device);
        let images =
            Tensor::<B, 4>::random([2, 3, 32, 32], Distribution::Normal(0.0, 1.0), &device);
        let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![1i64, 7], [2]), &device);
        let loss_fn = CrossEntropyLossConfig::new().init(&device);

        let before = counters::snapshot();
        let guard = autocast(dtype).unwrap();
        let logits = model.forward(images);
        let loss = loss_fn.forward(logits.clone(), labels);
        drop(guard);
        let ran = counters::snapshot().since(&before);

        // ResNet-50: the stem, 16 bottlenecks of 3 convolutions, 4 downsampling convolutions.
        assert_eq!(ran.op("conv2d"), 1 + 16 * 3 + 4, "{dtype:?}");
        assert_eq!(ran.op_in_half("conv2d"), ran.op("conv2d"), "{dtype:?}");
        assert_eq!(ran.op("linear"), 1, "{dtype:?}");
        assert_eq!(ran.op_in_half("linear"), 1, "{dtype:?}");
        for name in LOWER_PRECISION_OPS {
            assert_eq!(ran.op_in_half(name), ran.op(name), "{dtype:?}: {name}");
        }
        for name in FLOAT32_OPS {
            assert_eq!(ran.op_in_half(name), 0, "{dtype:?}: {name} ran in half");
        }
        // Batch norm's statistics are means, computed in f32.
        assert!(ran.op("float_mean_dim") > 0);
        assert!(ran.kernel("autocast_cast") > 0);
        assert_eq!(logits.dtype(), DType::from(dtype), "the head's output");
        assert_eq!(
            loss.dtype(),
            DType::F32,
            "log_softmax and the loss run in f32"
        );

        // Master weights stay f32 and get f32 gradients.
        let grads = loss.backward();
        let grad = model
            .conv1
            .weight
            .grad(&grads)
            .expect("conv1 has a gradient");
        assert_eq!(model.conv1.weight.val().dtype(), DType::F32);
        assert_eq!(grad.dtype(), DType::F32);
        let fc = model.fc.weight.grad(&grads).expect("fc has a gradient");
        assert_eq!(fc.dtype(), DType::F32);
    }
}

#[test]
fn without_autocast_nothing_is_cast() {
    let device = FlexDevice;
    let model = ResNetConfig::resnet18(10).init::<B>(&device);
    let images = Tensor::<B, 4>::random([1, 3, 32, 32], Distribution::Normal(0.0, 1.0), &device);
    let before = counters::snapshot();
    let logits = model.forward(images);
    let ran = counters::snapshot().since(&before);
    assert!(ran.op("conv2d") > 0);
    assert_eq!(ran.op_in_half("conv2d"), 0);
    assert_eq!(ran.kernel("autocast_cast"), 0);
    assert_eq!(logits.dtype(), DType::F32);
}
