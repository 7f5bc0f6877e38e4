//! `burn::nn` modules: Linear, Conv2d, BatchNorm (train mode), MaxPool2d, AdaptiveAvgPool2d,
//! CrossEntropyLoss. Parameters are set from host data (and their gradients compared), so the
//! backends never draw random weights of their own.

use burn::nn::conv::Conv2dConfig;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{AdaptiveAvgPool2dConfig, MaxPool2dConfig};
use burn::nn::{BatchNormConfig, LinearConfig, PaddingConfig2d};

case!(
    /// `nn::Linear` 33 → 127 with bias on a `[7, 33]` batch; weight `[33, 127]` (Burn's row
    /// layout). Burn calls `ModuleOps::linear`, not `float_matmul`.
    check_linear, Contraction, routes: &[("linear", 1), ("linear_x_backward", 1), ("linear_weight_backward", 1)],
    <C> |x, out| {
        let mut linear = LinearConfig::new(33, 127).init::<C>(x.device());
        linear.weight = x.param("weight", [33, 127], 33f32.sqrt().recip());
        linear.bias = Some(x.param("bias", [127], 0.1));
        let input = x.normal("input", [7, 33]);
        out.push("output", linear.forward(input));
    }
);

case!(
    /// `nn::conv::Conv2d` 3 → 5 channels, 3×3 kernel, stride 2, padding 1, groups 1, with
    /// bias, on a `[2, 3, 7, 9]` batch (odd spatial sizes) → `[2, 5, 4, 5]`.
    check_conv2d, Contraction, routes: &[("conv2d", 1), ("conv2d_x_backward", 1), ("conv2d_weight_backward", 1)],
    <C> |x, out| {
        let mut conv = Conv2dConfig::new([3, 5], [3, 3])
            .with_stride([2, 2])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .init::<C>(x.device());
        conv.weight = x.param("weight", [5, 3, 3, 3], 27f32.sqrt().recip());
        conv.bias = Some(x.param("bias", [5], 0.1));
        let input = x.normal("input", [2, 3, 7, 9]);
        out.push("output", conv.forward(input));
    }
);

case!(
    /// `nn::BatchNorm` over 5 channels of a `[4, 5, 7, 3]` batch in train mode (batch
    /// statistics); gamma and beta random; the updated running mean and variance are compared
    /// as state.
    check_batch_norm, Reduction, routes: &[("float_mean_dim", 2), ("float_sqrt", 1)],
    <C> |x, out| {
        let mut bn = BatchNormConfig::new(5).init::<C>(x.device());
        bn.gamma = x.param_uniform("gamma", [5], 0.5, 1.5);
        bn.beta = x.param("beta", [5], 0.5);
        let input = x.normal("input", [4, 5, 7, 3]) * 2.0 + 0.5;
        out.push("output", bn.forward(input));
        out.state("running mean", bn.running_mean.value_sync());
        out.state("running var", bn.running_var.value_sync());
    }
);

case!(
    /// `nn::pool::MaxPool2d` 3×3, stride 2, padding 1 on `[2, 3, 7, 9]` → `[2, 3, 4, 5]`; the
    /// gradient goes to each window's arg-max (overlapping windows accumulate).
    check_max_pool2d, Reduction, routes: &[("max_pool2d_with_indices", 1), ("max_pool2d_with_indices_backward", 1)],
    <C> |x, out| {
        let pool = MaxPool2dConfig::new([3, 3])
            .with_strides([2, 2])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .init();
        out.push("output", pool.forward(x.normal("input", [2, 3, 7, 9])));
    }
);

case!(
    /// `nn::pool::AdaptiveAvgPool2d` of `[2, 3, 7, 9]` to `[3, 4]` (uneven, overlapping bins)
    /// and to `[1, 1]` (global average, as in ResNet).
    check_adaptive_avg_pool2d, Reduction, routes: &[("adaptive_avg_pool2d", 2), ("adaptive_avg_pool2d_backward", 2)],
    <C> |x, out| {
        let input = x.normal("input", [2, 3, 7, 9]);
        let bins = AdaptiveAvgPool2dConfig::new([3, 4]).init();
        let global = AdaptiveAvgPool2dConfig::new([1, 1]).init();
        out.push("to 3x4", bins.forward(input.clone()));
        out.push("to 1x1", global.forward(input));
    }
);

case!(
    /// `nn::loss::CrossEntropyLoss` (logits, mean reduction) of `[7, 33]` logits of scale 3 and
    /// random targets → `[1]`.
    check_cross_entropy, Reduction, routes: &[("float_gather", 1)],
    <C> |x, out| {
        let loss = CrossEntropyLossConfig::new().init::<C>(x.device());
        let logits = x.normal("logits", [7, 33]) * 3.0;
        let targets = x.indices([7], 33);
        out.push("loss", loss.forward(logits, targets));
    }
);
