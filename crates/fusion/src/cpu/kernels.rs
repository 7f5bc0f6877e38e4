//! burnacc's fused kernels on `CpuFlex`: burnacc's CPU kernels (`crate::kernels`) for f32
//! tensors, each bumping its counter (`crate::counters`); Flex's implementations (the plain-Burn
//! references) for other dtypes; Flex's fused multi-threaded optimizer loops.
//!
//! Through `Fusion<CpuFlex>` each kernel call is one recorded custom operation
//! (`burnacc_kernels::custom_op`), as on CubeCL devices.

use super::CpuFlex;
use crate::counters;
use crate::kernels::batch_norm::{ChannelLayout, batch_norm_backward, batch_norm_forward};
use crate::kernels::bias_dropout_add::{bias_dropout_add_backward, bias_dropout_add_forward};
use crate::kernels::contiguous::contiguous;
use crate::kernels::gelu::{
    bias_gelu_backward, bias_gelu_forward, quick_gelu_backward, quick_gelu_forward,
};
use crate::kernels::layer_norm::{layer_norm_backward, layer_norm_forward};
use crate::kernels::softmax::{WindowBias, softmax_backward, window_softmax_forward};
use crate::relabel;
use burn::backend::Flex;
use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::{Bytes, DType, Shape};
use burnacc_kernels::batch_norm::BatchNormKernel;
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, read_seed};
use burnacc_kernels::dcn::DcnKernel;
use burnacc_kernels::gelu::GeluKernel;
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_kernels::nms::NmsKernel;
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use burnacc_kernels::softmax::SoftmaxKernel;
use burnacc_kernels::swin_attention::SwinAttentionKernel;
use burnacc_kernels::window_process::WindowProcessKernel;
use std::borrow::Cow;

impl WindowProcessKernel for CpuFlex {}

/// NMS selects on the host, as on Flex.
impl NmsKernel for CpuFlex {}

/// Burn's deformable-convolution backward, as on Flex.
impl DcnKernel for CpuFlex {}

/// Whether every tensor is f32 (the dtype burnacc's CPU kernels compute; others take Flex's
/// reference path).
fn all_f32<'a>(tensors: impl IntoIterator<Item = &'a FlexTensor>) -> bool {
    tensors.into_iter().all(|t| t.dtype() == DType::F32)
}

/// The elements of an f32 tensor in row-major order: borrowed when contiguous, else copied.
fn values(tensor: &FlexTensor) -> Cow<'_, [f32]> {
    match tensor.as_slice::<f32>() {
        Some(values) => Cow::Borrowed(values),
        None => Cow::Owned(
            contiguous(tensor.clone())
                .as_slice::<f32>()
                .expect("contiguous")
                .to_vec(),
        ),
    }
}

/// A contiguous f32 tensor of `shape` holding `values`.
fn tensor(values: Vec<f32>, shape: Shape) -> FlexTensor {
    FlexTensor::new(
        Bytes::from_elems(values),
        Layout::contiguous(shape),
        DType::F32,
    )
}

/// Size of the last dimension (1 for a scalar).
fn width(tensor: &FlexTensor) -> usize {
    tensor.layout().shape().last().copied().unwrap_or(1)
}

impl LayerNormKernel for CpuFlex {
    fn fused_layer_norm_with_stats(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        eps: f64,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if !all_f32([&x, &gamma, &beta]) {
            return Flex::fused_layer_norm_with_stats(x, gamma, beta, eps);
        }
        counters::LAYER_NORM_FORWARD.bump();
        let (shape, width) = (x.layout().shape().clone(), width(&x));
        let (y, mean, rstd) = layer_norm_forward(
            &values(&x),
            &values(&gamma),
            &values(&beta),
            width,
            eps as f32,
        );
        let rows = Shape::new([mean.len()]);
        (
            tensor(y, shape),
            tensor(mean, rows.clone()),
            tensor(rstd, rows),
        )
    }

    fn fused_layer_norm_backward(
        x: FlexTensor,
        gamma: FlexTensor,
        grad_out: FlexTensor,
        mean: FlexTensor,
        rstd: FlexTensor,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if !all_f32([&x, &gamma, &grad_out, &mean, &rstd]) {
            return Flex::fused_layer_norm_backward(x, gamma, grad_out, mean, rstd);
        }
        counters::LAYER_NORM_BACKWARD.bump();
        let (shape, width) = (x.layout().shape().clone(), width(&x));
        let (dx, dgamma, dbeta) = layer_norm_backward(
            &values(&x),
            &values(&gamma),
            &values(&grad_out),
            &values(&mean),
            &values(&rstd),
            width,
        );
        let vector = Shape::new([width]);
        (
            tensor(dx, shape),
            tensor(dgamma, vector.clone()),
            tensor(dbeta, vector),
        )
    }
}

/// `x: [N, C, ...]` as the channel layout of its row-major elements.
fn channel_layout(x: &FlexTensor) -> ChannelLayout {
    let dims = x.layout().shape().as_slice();
    assert!(
        dims.len() >= 2,
        "batch_norm: the input must be [N, C, ...], got shape {dims:?}"
    );
    ChannelLayout {
        batch: dims[0],
        channels: dims[1],
        spatial: dims[2..].iter().product(),
    }
}

impl BatchNormKernel for CpuFlex {
    fn fused_batch_norm_with_stats(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        eps: f64,
        relu: bool,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if !all_f32([&x, &gamma, &beta]) {
            return Flex::fused_batch_norm_with_stats(x, gamma, beta, eps, relu);
        }
        counters::BATCH_NORM_FORWARD.bump();
        let (shape, layout) = (x.layout().shape().clone(), channel_layout(&x));
        let (y, mean, rstd) = batch_norm_forward(
            &values(&x),
            &values(&gamma),
            &values(&beta),
            layout,
            eps as f32,
            relu,
        );
        let channels = Shape::new([layout.channels]);
        (
            tensor(y, shape),
            tensor(mean, channels.clone()),
            tensor(rstd, channels),
        )
    }

    fn fused_batch_norm_backward(
        x: FlexTensor,
        gamma: FlexTensor,
        grad_out: FlexTensor,
        mean: FlexTensor,
        rstd: FlexTensor,
        relu_output: Option<FlexTensor>,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if !all_f32(
            [&x, &gamma, &grad_out, &mean, &rstd]
                .into_iter()
                .chain(&relu_output),
        ) {
            return Flex::fused_batch_norm_backward(x, gamma, grad_out, mean, rstd, relu_output);
        }
        counters::BATCH_NORM_BACKWARD.bump();
        let (shape, layout) = (x.layout().shape().clone(), channel_layout(&x));
        assert_eq!(
            grad_out.layout().shape(),
            &shape,
            "batch_norm: grad_out must have the input's shape"
        );
        if let Some(y) = &relu_output {
            assert_eq!(
                y.layout().shape(),
                &shape,
                "batch_norm: relu_output must have the input's shape"
            );
        }
        // Borrowed when contiguous, as every other input: no copy of the activation.
        let relu_output = relu_output.as_ref().map(values);
        let (dx, dgamma, dbeta) = batch_norm_backward(
            &values(&x),
            &values(&gamma),
            &values(&grad_out),
            &values(&mean),
            &values(&rstd),
            relu_output.as_deref(),
            layout,
        );
        let channels = Shape::new([layout.channels]);
        (
            tensor(dx, shape),
            tensor(dgamma, channels.clone()),
            tensor(dbeta, channels),
        )
    }
}

impl GeluKernel for CpuFlex {
    fn fused_quick_gelu(x: FlexTensor) -> FlexTensor {
        if !all_f32([&x]) {
            return Flex::fused_quick_gelu(x);
        }
        counters::GELU_FORWARD.bump();
        tensor(quick_gelu_forward(&values(&x)), x.layout().shape().clone())
    }

    fn fused_quick_gelu_backward(x: FlexTensor, grad_out: FlexTensor) -> FlexTensor {
        if !all_f32([&x, &grad_out]) {
            return Flex::fused_quick_gelu_backward(x, grad_out);
        }
        counters::GELU_BACKWARD.bump();
        let dx = quick_gelu_backward(&values(&x), &values(&grad_out));
        tensor(dx, x.layout().shape().clone())
    }

    fn fused_bias_gelu(x: FlexTensor, bias: Option<FlexTensor>) -> FlexTensor {
        if !all_f32([&x].into_iter().chain(&bias)) {
            return Flex::fused_bias_gelu(x, bias);
        }
        counters::GELU_FORWARD.bump();
        let bias = bias.as_ref().map(values);
        let y = bias_gelu_forward(&values(&x), bias.as_deref());
        tensor(y, x.layout().shape().clone())
    }

    fn fused_bias_gelu_backward(
        x: FlexTensor,
        bias: Option<FlexTensor>,
        grad_out: FlexTensor,
    ) -> (FlexTensor, Option<FlexTensor>) {
        if !all_f32([&x, &grad_out].into_iter().chain(&bias)) {
            return Flex::fused_bias_gelu_backward(x, bias, grad_out);
        }
        counters::GELU_BACKWARD.bump();
        let bias_values = bias.as_ref().map(values);
        let (dx, dbias) =
            bias_gelu_backward(&values(&x), bias_values.as_deref(), &values(&grad_out));
        let dbias = dbias.map(|d| {
            let width = d.len();
            tensor(d, Shape::new([width]))
        });
        (tensor(dx, x.layout().shape().clone()), dbias)
    }
}

impl BiasDropoutAddKernel for CpuFlex {
    fn fused_bias_dropout_add(
        x: FlexTensor,
        bias: Option<FlexTensor>,
        residual: FlexTensor,
        p: f64,
        seed: Option<FlexTensor>,
    ) -> FlexTensor {
        if !all_f32([&x, &residual].into_iter().chain(&bias)) {
            return Flex::fused_bias_dropout_add(x, bias, residual, p, seed);
        }
        counters::BIAS_DROPOUT_ADD_FORWARD.bump();
        let seed = read_seed::<Flex>(seed, p);
        let bias = bias.as_ref().map(values);
        let y = bias_dropout_add_forward(
            &values(&x),
            bias.as_deref(),
            &values(&residual),
            width(&x),
            p,
            seed,
        );
        tensor(y, x.layout().shape().clone())
    }

    fn fused_bias_dropout_add_backward(
        grad_out: FlexTensor,
        p: f64,
        seed: Option<FlexTensor>,
        with_bias: bool,
    ) -> (FlexTensor, Option<FlexTensor>) {
        if !all_f32([&grad_out]) {
            return Flex::fused_bias_dropout_add_backward(grad_out, p, seed, with_bias);
        }
        counters::BIAS_DROPOUT_ADD_BACKWARD.bump();
        let (shape, width) = (grad_out.layout().shape().clone(), width(&grad_out));
        let seed = read_seed::<Flex>(seed, p);
        let (dx, dbias) = bias_dropout_add_backward(&values(&grad_out), width, p, seed, with_bias);
        (
            tensor(dx, shape),
            dbias.map(|d| tensor(d, Shape::new([width]))),
        )
    }
}

impl SwinAttentionKernel for CpuFlex {
    fn fused_window_softmax(
        scores: FlexTensor,
        table: FlexTensor,
        index: FlexTensor,
        mask: Option<FlexTensor>,
    ) -> FlexTensor {
        if !all_f32([&scores, &table].into_iter().chain(&mask)) || scores.layout().num_dims() != 4 {
            return Flex::fused_window_softmax(scores, table, index, mask);
        }
        counters::WINDOW_SOFTMAX_FORWARD.bump();
        let shape = scores.layout().shape().clone();
        let dims = [shape[0], shape[1], shape[2], shape[3]];
        let index: Vec<usize> = index
            .into_data()
            .convert::<i64>()
            .iter::<i64>()
            .map(|i| i as usize)
            .collect();
        let (table, mask) = (values(&table), mask.as_ref().map(values));
        let bias = WindowBias {
            table: &table,
            index: &index,
            mask: mask.as_deref(),
        };
        tensor(window_softmax_forward(&values(&scores), &bias, dims), shape)
    }

    fn fused_window_softmax_backward(probs: FlexTensor, grad_probs: FlexTensor) -> FlexTensor {
        if !all_f32([&probs, &grad_probs]) {
            return Flex::fused_window_softmax_backward(probs, grad_probs);
        }
        counters::WINDOW_SOFTMAX_BACKWARD.bump();
        let (shape, width) = (probs.layout().shape().clone(), width(&probs));
        tensor(
            softmax_backward(&values(&probs), &values(&grad_probs), width),
            shape,
        )
    }
}

/// The softmax node's backward is the window-softmax backward above.
impl SoftmaxKernel for CpuFlex {}

/// Flex's fused loops: `CpuFlex` and Flex share their tensors, so the groups move across.
impl MultiTensorOptim for CpuFlex {
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<FlexTensor>,
    ) -> AdamUpdate<Self> {
        let update = Flex::multi_tensor_adam(relabel::adam_group(group), hyper, found_inf);
        relabel::adam_update(update)
    }

    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<FlexTensor>,
    ) -> SgdUpdate<Self> {
        let update = Flex::multi_tensor_sgd(relabel::sgd_group(group), hyper, found_inf);
        relabel::sgd_update(update)
    }
}
