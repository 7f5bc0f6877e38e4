//! burnacc's fused kernels on `CubeAcc<R>`: CubeCL's (those of `CubeBackend`, which
//! `CubeAcc<R>` shares its tensors with), unchanged. Through `Fusion<CubeAcc<R>>` each kernel
//! call is one recorded custom operation (`burnacc_kernels::custom_op`), as through Burn's
//! fusion.

use super::{CubeAcc, CubeInner};
use crate::relabel;
use burn::tensor::ops::{DeformConv2dBackward, DeformConvOptions};
use burn_cubecl::CubeRuntime;
use burn_cubecl::tensor::CubeTensor;
use burnacc_kernels::batch_norm::BatchNormKernel;
use burnacc_kernels::bias_dropout_add::BiasDropoutAddKernel;
use burnacc_kernels::dcn::DcnKernel;
use burnacc_kernels::gelu::GeluKernel;
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_kernels::nms::{NmsKernel, SoftNmsConfig};
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use burnacc_kernels::softmax::SoftmaxKernel;
use burnacc_kernels::swin_attention::SwinAttentionKernel;
use burnacc_kernels::window_process::{WindowGeometry, WindowProcessKernel};

type T<R> = CubeTensor<R>;

impl<R: CubeRuntime> LayerNormKernel for CubeAcc<R> {
    fn fused_layer_norm_with_stats(
        x: T<R>,
        gamma: T<R>,
        beta: T<R>,
        eps: f64,
    ) -> (T<R>, T<R>, T<R>) {
        CubeInner::<R>::fused_layer_norm_with_stats(x, gamma, beta, eps)
    }

    fn fused_layer_norm_backward(
        x: T<R>,
        gamma: T<R>,
        grad_out: T<R>,
        mean: T<R>,
        rstd: T<R>,
    ) -> (T<R>, T<R>, T<R>) {
        CubeInner::<R>::fused_layer_norm_backward(x, gamma, grad_out, mean, rstd)
    }
}

impl<R: CubeRuntime> BatchNormKernel for CubeAcc<R> {
    fn fused_batch_norm_with_stats(
        x: T<R>,
        gamma: T<R>,
        beta: T<R>,
        eps: f64,
        relu: bool,
    ) -> (T<R>, T<R>, T<R>) {
        CubeInner::<R>::fused_batch_norm_with_stats(x, gamma, beta, eps, relu)
    }

    fn fused_batch_norm_backward(
        x: T<R>,
        gamma: T<R>,
        grad_out: T<R>,
        mean: T<R>,
        rstd: T<R>,
        relu_output: Option<T<R>>,
    ) -> (T<R>, T<R>, T<R>) {
        CubeInner::<R>::fused_batch_norm_backward(x, gamma, grad_out, mean, rstd, relu_output)
    }
}

impl<R: CubeRuntime> GeluKernel for CubeAcc<R> {
    fn fused_quick_gelu(x: T<R>) -> T<R> {
        CubeInner::<R>::fused_quick_gelu(x)
    }

    fn fused_quick_gelu_backward(x: T<R>, grad_out: T<R>) -> T<R> {
        CubeInner::<R>::fused_quick_gelu_backward(x, grad_out)
    }

    fn fused_bias_gelu(x: T<R>, bias: Option<T<R>>) -> T<R> {
        CubeInner::<R>::fused_bias_gelu(x, bias)
    }

    fn fused_bias_gelu_backward(
        x: T<R>,
        bias: Option<T<R>>,
        grad_out: T<R>,
    ) -> (T<R>, Option<T<R>>) {
        CubeInner::<R>::fused_bias_gelu_backward(x, bias, grad_out)
    }
}

impl<R: CubeRuntime> BiasDropoutAddKernel for CubeAcc<R> {
    fn fused_bias_dropout_add(
        x: T<R>,
        bias: Option<T<R>>,
        residual: T<R>,
        p: f64,
        seed: Option<T<R>>,
    ) -> T<R> {
        CubeInner::<R>::fused_bias_dropout_add(x, bias, residual, p, seed)
    }

    fn fused_bias_dropout_add_backward(
        grad_out: T<R>,
        p: f64,
        seed: Option<T<R>>,
        with_bias: bool,
    ) -> (T<R>, Option<T<R>>) {
        CubeInner::<R>::fused_bias_dropout_add_backward(grad_out, p, seed, with_bias)
    }
}

impl<R: CubeRuntime> SwinAttentionKernel for CubeAcc<R> {
    fn fused_window_softmax(scores: T<R>, table: T<R>, index: T<R>, mask: Option<T<R>>) -> T<R> {
        CubeInner::<R>::fused_window_softmax(scores, table, index, mask)
    }

    fn fused_window_softmax_backward(probs: T<R>, grad_probs: T<R>) -> T<R> {
        CubeInner::<R>::fused_window_softmax_backward(probs, grad_probs)
    }
}

/// The softmax node's backward is the window-softmax backward above.
impl<R: CubeRuntime> SoftmaxKernel for CubeAcc<R> {}

impl<R: CubeRuntime> WindowProcessKernel for CubeAcc<R> {
    fn fused_window_process(x: T<R>, geometry: WindowGeometry) -> T<R> {
        CubeInner::<R>::fused_window_process(x, geometry)
    }

    fn fused_window_process_reverse(windows: T<R>, geometry: WindowGeometry) -> T<R> {
        CubeInner::<R>::fused_window_process_reverse(windows, geometry)
    }
}

impl<R: CubeRuntime> NmsKernel for CubeAcc<R> {
    fn nms_on_device(device: &R::Device) -> bool {
        CubeInner::<R>::nms_on_device(device)
    }

    fn nms_suppression_mask(
        boxes: T<R>,
        classes: T<R>,
        iou_threshold: f32,
        offset: f32,
    ) -> Vec<u32> {
        CubeInner::<R>::nms_suppression_mask(boxes, classes, iou_threshold, offset)
    }

    fn soft_nms_segments(
        boxes: T<R>,
        scores: T<R>,
        segments: &[usize],
        config: &SoftNmsConfig,
    ) -> Vec<(usize, f32)> {
        CubeInner::<R>::soft_nms_segments(boxes, scores, segments, config)
    }
}

impl<R: CubeRuntime> DcnKernel for CubeAcc<R> {
    fn dcn_backward(
        x: T<R>,
        offset: T<R>,
        weight: T<R>,
        mask: Option<T<R>>,
        bias: Option<T<R>>,
        grad_out: T<R>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        relabel::deform_conv2d_backward(CubeInner::<R>::dcn_backward(
            x, offset, weight, mask, bias, grad_out, options,
        ))
    }
}

impl<R: CubeRuntime> MultiTensorOptim for CubeAcc<R> {
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<T<R>>,
    ) -> AdamUpdate<Self> {
        let group = relabel::adam_group(group);
        relabel::adam_update(CubeInner::<R>::multi_tensor_adam(group, hyper, found_inf))
    }

    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<T<R>>,
    ) -> SgdUpdate<Self> {
        let group = relabel::sgd_group(group);
        relabel::sgd_update(CubeInner::<R>::multi_tensor_sgd(group, hyper, found_inf))
    }
}
