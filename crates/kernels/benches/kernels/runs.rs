//! The timed calls of every case: the fused kernels through the backend extension traits, the
//! plain-Burn references, and the copy that sets the bandwidth to compare with.
//!
//! Inputs are uniform random on the device (activations around one, small gradients,
//! non-negative second moments), built before timing starts.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Distribution, Shape, Tensor, TensorData, TensorPrimitive};
use burnacc_backend::swin_window::{
    cyclic_shift, relative_position_index, shifted_window_mask, window_partition, window_reverse,
};
use burnacc_kernels::bias_dropout_add::{BiasDropoutAddKernel, DropoutSeed};
use burnacc_kernels::gelu::{
    GeluKernel, bias_gelu_backward_reference, bias_gelu_reference, quick_gelu_backward_reference,
    quick_gelu_reference,
};
use burnacc_kernels::layer_norm::{
    LayerNormKernel, layer_norm_backward_from_stats_reference, layer_norm_stats_reference,
};
use burnacc_kernels::optim::reference::{adam_group_reference, sgd_group_reference};
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use burnacc_kernels::swin_attention::{
    SwinAttentionKernel, window_softmax_backward_reference, window_softmax_reference,
};
use burnacc_kernels::window_process::{WindowGeometry, WindowProcessKernel};

use crate::cases::{Case, Sizes, SwinStage};
use crate::timing::{Sync, Timer};

/// LayerNorm epsilon (BERT's).
const EPS: f64 = 1e-12;
/// Dropout probability of the bias + dropout + add cases (BERT's hidden dropout).
const P: f64 = 0.1;
/// Dropout seed of the fused cases (uploaded once, read by the kernels on the device).
const SEED: u64 = 42;
/// AdamW as BERT fine-tuning uses it.
const ADAM: AdamHyper = AdamHyper {
    lr: 2e-5,
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    weight_decay: 0.01,
    decoupled: true,
};
/// SGD as torchvision's ResNet-50 recipe uses it.
const SGD: SgdHyper = SgdHyper {
    lr: 0.1,
    momentum: 0.9,
    dampening: 0.0,
    weight_decay: 1e-4,
    nesterov: false,
};
/// The step count every parameter reaches (sets Adam's bias corrections).
const STEP: i32 = 10;

/// A backend with the fused kernels, and a copy to measure its bandwidth with.
pub trait Fused:
    LayerNormKernel
    + GeluKernel
    + BiasDropoutAddKernel
    + MultiTensorOptim
    + WindowProcessKernel
    + SwinAttentionKernel
{
    /// Median seconds per copy of `bytes / 2` bytes (read once, written once).
    fn copy_seconds(bytes: usize, timer: &Timer, device: &Self::Device) -> f64;
}

/// Median seconds per call of the fused kernel of `case` on `B`, back-to-back calls.
pub fn fused<B: Fused>(case: Case, sizes: &Sizes, timer: &Timer, device: &B::Device) -> f64 {
    let out = sizes.bytes(case);
    let time = |f: &mut dyn FnMut() -> Box<dyn std::any::Any>| {
        timer.time::<B, _>(device, Sync::Batched, out, f)
    };
    match case {
        Case::LayerNormFwd | Case::LayerNormBwd => {
            let [rows, width] = sizes.layer_norm;
            let (x, dy) = (
                activations::<B>(rows, width, device),
                grads::<B>(rows, width, device),
            );
            let (gamma, beta) = (
                uniform::<B>(&[width], 0.5, 1.5, device),
                uniform::<B>(&[width], -0.5, 0.5, device),
            );
            if case == Case::LayerNormFwd {
                return time(&mut || {
                    Box::new(B::fused_layer_norm_with_stats(
                        x.clone(),
                        gamma.clone(),
                        beta.clone(),
                        EPS,
                    ))
                });
            }
            let (_, mean, rstd) =
                B::fused_layer_norm_with_stats(x.clone(), gamma.clone(), beta, EPS);
            time(&mut || {
                Box::new(B::fused_layer_norm_backward(
                    x.clone(),
                    gamma.clone(),
                    dy.clone(),
                    mean.clone(),
                    rstd.clone(),
                ))
            })
        }
        Case::BiasGeluFwd | Case::BiasGeluBwd | Case::QuickGeluFwd | Case::QuickGeluBwd => {
            let [rows, width] = sizes.gelu;
            let (x, dy) = (
                activations::<B>(rows, width, device),
                grads::<B>(rows, width, device),
            );
            let bias = uniform::<B>(&[width], -0.5, 0.5, device);
            match case {
                Case::BiasGeluFwd => {
                    time(&mut || Box::new(B::fused_bias_gelu(x.clone(), Some(bias.clone()))))
                }
                Case::BiasGeluBwd => time(&mut || {
                    Box::new(B::fused_bias_gelu_backward(
                        x.clone(),
                        Some(bias.clone()),
                        dy.clone(),
                    ))
                }),
                Case::QuickGeluFwd => time(&mut || Box::new(B::fused_quick_gelu(x.clone()))),
                _ => time(&mut || Box::new(B::fused_quick_gelu_backward(x.clone(), dy.clone()))),
            }
        }
        Case::BdaFwd | Case::BdaBwd => {
            let [rows, width] = sizes.bda;
            let x = activations::<B>(rows, width, device);
            let residual = activations::<B>(rows, width, device);
            let dy = grads::<B>(rows, width, device);
            let bias = uniform::<B>(&[width], -0.5, 0.5, device);
            let seed = DropoutSeed::from_u64(SEED)
                .to_tensor::<B>(device)
                .into_primitive();
            if case == Case::BdaFwd {
                return time(&mut || {
                    Box::new(B::fused_bias_dropout_add(
                        x.clone(),
                        Some(bias.clone()),
                        residual.clone(),
                        P,
                        Some(seed.clone()),
                    ))
                });
            }
            time(&mut || {
                Box::new(B::fused_bias_dropout_add_backward(
                    dy.clone(),
                    P,
                    Some(seed.clone()),
                    true,
                ))
            })
        }
        Case::Adam => adam::<B>(&sizes.adam.0, timer, device, B::multi_tensor_adam),
        Case::Sgd => sgd::<B>(&sizes.sgd.0, timer, device, B::multi_tensor_sgd),
        Case::WindowProcess | Case::WindowProcessReverse => {
            let s = sizes.swin;
            let geometry = geometry(s);
            if case == Case::WindowProcess {
                let x = uniform::<B>(&[s.batch, s.side, s.side, s.channels], -1.0, 1.0, device);
                return time(&mut || Box::new(B::fused_window_process(x.clone(), geometry)));
            }
            let windows = uniform::<B>(&[s.windows(), s.tokens(), s.channels], -1.0, 1.0, device);
            time(&mut || Box::new(B::fused_window_process_reverse(windows.clone(), geometry)))
        }
        Case::SwinSoftmaxFwd | Case::SwinSoftmaxBwd => {
            let s = sizes.swin;
            let (scores, table, index, mask) = attention_inputs::<B>(s, device);
            let (scores, table, mask) = (
                scores.into_primitive().tensor(),
                table.into_primitive().tensor(),
                mask.into_primitive().tensor(),
            );
            let index = index.into_primitive();
            if case == Case::SwinSoftmaxFwd {
                return time(&mut || {
                    Box::new(B::fused_window_softmax(
                        scores.clone(),
                        table.clone(),
                        index.clone(),
                        Some(mask.clone()),
                    ))
                });
            }
            let probs = B::fused_window_softmax(scores.clone(), table, index, Some(mask));
            let dprobs = uniform::<B>(&scores_dims(s), -1.0, 1.0, device);
            time(&mut || {
                Box::new(B::fused_window_softmax_backward(
                    probs.clone(),
                    dprobs.clone(),
                ))
            })
        }
    }
}

/// The shifted geometry of the Swin cases.
fn geometry(s: SwinStage) -> WindowGeometry {
    WindowGeometry {
        resolution: [s.side; 2],
        window: [s.window; 2],
        shift: [s.window / 2; 2],
    }
}

/// `[windows, heads, tokens, tokens]`.
fn scores_dims(s: SwinStage) -> [usize; 4] {
    [s.windows(), s.heads, s.tokens(), s.tokens()]
}

/// Scores, relative position bias table, index and shifted-window mask of the Swin cases, the
/// index and the mask as the model builds them.
fn attention_inputs<B: Backend>(
    s: SwinStage,
    device: &B::Device,
) -> (
    Tensor<B, 4>,
    Tensor<B, 2>,
    Tensor<B, 1, burn::tensor::Int>,
    Tensor<B, 3>,
) {
    let offsets = (2 * s.window - 1).pow(2);
    let g = geometry(s);
    (
        wrap::<B, 4>(uniform::<B>(&scores_dims(s), -4.0, 4.0, device)),
        wrap::<B, 2>(uniform::<B>(&[offsets, s.heads], -1.0, 1.0, device)),
        relative_position_index::<B>(g.window, device),
        shifted_window_mask::<B>(g.resolution, g.window, g.shift, device),
    )
}

/// Median seconds per call of the plain-Burn reference of `case` on `B`, synchronised as
/// `sync` says (the optimizer steps always sync each call).
///
/// The references are the crate's, except for dropout: the crate's reference builds its
/// mask on the host (to match the kernels bit for bit), so here it is Burn's own
/// `burn::nn::Dropout` recipe instead, a Bernoulli mask drawn on the device and kept for the
/// backward as autodiff would keep it.
pub fn reference<B: Backend>(
    case: Case,
    sizes: &Sizes,
    timer: &Timer,
    device: &B::Device,
    sync: Sync,
) -> f64 {
    let out = sizes.bytes(case);
    let time =
        |f: &mut dyn FnMut() -> Box<dyn std::any::Any>| timer.time::<B, _>(device, sync, out, f);
    match case {
        Case::LayerNormFwd | Case::LayerNormBwd => {
            let [rows, width] = sizes.layer_norm;
            let x = wrap::<B, 2>(activations::<B>(rows, width, device));
            let dy = wrap::<B, 2>(grads::<B>(rows, width, device));
            let gamma = wrap::<B, 1>(uniform::<B>(&[width], 0.5, 1.5, device));
            let beta = wrap::<B, 1>(uniform::<B>(&[width], -0.5, 0.5, device));
            if case == Case::LayerNormFwd {
                return time(&mut || {
                    Box::new(layer_norm_forward(x.clone(), gamma.clone(), beta.clone()))
                });
            }
            let (_, mean, rstd) = layer_norm_forward(x.clone(), gamma.clone(), beta);
            time(&mut || {
                Box::new(layer_norm_backward_from_stats_reference(
                    x.clone(),
                    gamma.clone(),
                    dy.clone(),
                    mean.clone(),
                    rstd.clone(),
                ))
            })
        }
        Case::BiasGeluFwd | Case::BiasGeluBwd | Case::QuickGeluFwd | Case::QuickGeluBwd => {
            let [rows, width] = sizes.gelu;
            let x = wrap::<B, 2>(activations::<B>(rows, width, device));
            let dy = wrap::<B, 2>(grads::<B>(rows, width, device));
            let bias = wrap::<B, 1>(uniform::<B>(&[width], -0.5, 0.5, device));
            match case {
                Case::BiasGeluFwd => {
                    time(&mut || Box::new(bias_gelu_reference(x.clone(), Some(bias.clone()))))
                }
                Case::BiasGeluBwd => time(&mut || {
                    Box::new(bias_gelu_backward_reference(
                        x.clone(),
                        Some(bias.clone()),
                        dy.clone(),
                    ))
                }),
                Case::QuickGeluFwd => time(&mut || Box::new(quick_gelu_reference(x.clone()))),
                _ => time(&mut || Box::new(quick_gelu_backward_reference(x.clone(), dy.clone()))),
            }
        }
        Case::BdaFwd | Case::BdaBwd => {
            let [rows, width] = sizes.bda;
            let x = wrap::<B, 2>(activations::<B>(rows, width, device));
            let residual = wrap::<B, 2>(activations::<B>(rows, width, device));
            let dy = wrap::<B, 2>(grads::<B>(rows, width, device));
            let bias = wrap::<B, 1>(uniform::<B>(&[width], -0.5, 0.5, device));
            if case == Case::BdaFwd {
                return time(&mut || {
                    Box::new(dropout_add_forward(
                        x.clone(),
                        bias.clone(),
                        residual.clone(),
                    ))
                });
            }
            let (_, keep) = dropout_add_forward(x, bias, residual);
            time(&mut || Box::new(dropout_add_backward(dy.clone(), keep.clone())))
        }
        Case::Adam => adam::<B>(&sizes.adam.0, timer, device, adam_group_reference::<B>),
        Case::Sgd => sgd::<B>(&sizes.sgd.0, timer, device, sgd_group_reference::<B>),
        // The model's own ops: `torch.roll` as slices + `cat`, partition as reshape/permute.
        Case::WindowProcess | Case::WindowProcessReverse => {
            let s = sizes.swin;
            let g = geometry(s);
            let shift = (s.window / 2) as isize;
            if case == Case::WindowProcess {
                let x = wrap::<B, 4>(uniform::<B>(
                    &[s.batch, s.side, s.side, s.channels],
                    -1.0,
                    1.0,
                    device,
                ));
                return time(&mut || {
                    Box::new(window_partition(
                        cyclic_shift(x.clone(), -shift, -shift),
                        g.window,
                    ))
                });
            }
            let windows = wrap::<B, 3>(uniform::<B>(
                &[s.windows(), s.tokens(), s.channels],
                -1.0,
                1.0,
                device,
            ));
            time(&mut || {
                let x = window_reverse(windows.clone(), g.window, g.resolution);
                Box::new(cyclic_shift(x, shift, shift))
            })
        }
        Case::SwinSoftmaxFwd | Case::SwinSoftmaxBwd => {
            let s = sizes.swin;
            let (scores, table, index, mask) = attention_inputs::<B>(s, device);
            if case == Case::SwinSoftmaxFwd {
                return time(&mut || {
                    Box::new(window_softmax_reference(
                        scores.clone(),
                        table.clone(),
                        index.clone(),
                        Some(mask.clone()),
                    ))
                });
            }
            let probs = window_softmax_reference(scores, table, index, Some(mask));
            let dprobs = wrap::<B, 4>(uniform::<B>(&scores_dims(s), -1.0, 1.0, device));
            time(&mut || {
                Box::new(window_softmax_backward_reference(
                    probs.clone(),
                    dprobs.clone(),
                ))
            })
        }
    }
}

/// Median seconds per copy of `bytes / 2` bytes into a new tensor with `copy` (back-to-back
/// calls): the copy of the CubeCL backends.
pub fn copy_tensor<B: Backend>(
    bytes: usize,
    timer: &Timer,
    device: &B::Device,
    copy: fn(FloatTensor<B>) -> FloatTensor<B>,
) -> f64 {
    let x = uniform::<B>(&[(bytes / 8).max(1)], -1.0, 1.0, device);
    timer.time::<B, _>(device, Sync::Batched, bytes / 2, || copy(x.clone()))
}

/// LayerNorm forward for training with plain Burn ops (the crate's reference): `(y, mean,
/// rstd)`, statistics `[rows, 1]`.
fn layer_norm_forward<B: Backend>(
    x: Tensor<B, 2>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
) -> (Tensor<B, 2>, Tensor<B, 2>, Tensor<B, 2>) {
    let (mean, rstd) = layer_norm_stats_reference(x.clone(), EPS);
    let y = (x - mean.clone()) * rstd.clone() * gamma.unsqueeze::<2>() + beta.unsqueeze::<2>();
    (y, mean, rstd)
}

/// `residual + dropout(x + bias)` as `burn::nn::Dropout` does it: `(y, keep)`, `keep` the
/// f32 0/1 mask drawn on the device.
fn dropout_add_forward<B: Backend>(
    x: Tensor<B, 2>,
    bias: Tensor<B, 1>,
    residual: Tensor<B, 2>,
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let v = x + bias.unsqueeze::<2>();
    let keep = v.random_like(Distribution::Bernoulli(1.0 - P));
    let y = residual + v * keep.clone() * (1.0 / (1.0 - P));
    (y, keep)
}

/// Its backward from the saved mask: `(dx, dbias)`.
fn dropout_add_backward<B: Backend>(
    dy: Tensor<B, 2>,
    keep: Tensor<B, 2>,
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let dx = dy * keep * (1.0 / (1.0 - P));
    let dbias = dx.clone().sum_dim(0);
    (dx, dbias)
}

/// One Adam step function: the fused kernel or the per-tensor reference.
type AdamStep<B> = fn(AdamGroup<B>, AdamHyper, Option<FloatTensor<B>>) -> AdamUpdate<B>;
/// One SGD step function.
type SgdStep<B> = fn(SgdGroup<B>, SgdHyper, Option<FloatTensor<B>>) -> SgdUpdate<B>;

/// Median seconds per AdamW step over tensors of `shapes`, each step's state feeding the
/// next (as in training: state updated in place where the backend can), synced per step.
fn adam<B: Backend>(
    shapes: &[Vec<usize>],
    timer: &Timer,
    device: &B::Device,
    step: AdamStep<B>,
) -> f64 {
    let n = shapes.len();
    let make = |lo, hi| -> Vec<FloatTensor<B>> {
        shapes
            .iter()
            .map(|s| uniform::<B>(s, lo, hi, device))
            .collect()
    };
    let grads = make(-0.1, 0.1);
    let mut state = Some((make(-1.0, 1.0), make(-0.05, 0.05), make(0.0, 0.01)));
    let step_size = ADAM.lr / (1.0 - ADAM.beta1.powi(STEP));
    let bc2_sqrt = (1.0 - ADAM.beta2.powi(STEP)).sqrt();
    let step_size = vector::<B>(vec![step_size as f32; n], device);
    let bc2_sqrt = vector::<B>(vec![bc2_sqrt as f32; n], device);
    timer.time::<B, _>(device, Sync::EachCall, 0, || {
        let (params, exp_avg, exp_avg_sq) = state.take().expect("optimizer state");
        let group = AdamGroup {
            params,
            grads: grads.clone(),
            exp_avg,
            exp_avg_sq,
            step_size: step_size.clone(),
            bc2_sqrt: bc2_sqrt.clone(),
        };
        let update = step(group, ADAM, None);
        state = Some((update.params, update.exp_avg, update.exp_avg_sq));
    })
}

/// Median seconds per SGD-momentum step (not the buffer's first) over tensors of `shapes`,
/// chained and synced as [`adam`].
fn sgd<B: Backend>(
    shapes: &[Vec<usize>],
    timer: &Timer,
    device: &B::Device,
    step: SgdStep<B>,
) -> f64 {
    let make = |lo, hi| -> Vec<FloatTensor<B>> {
        shapes
            .iter()
            .map(|s| uniform::<B>(s, lo, hi, device))
            .collect()
    };
    let grads = make(-0.1, 0.1);
    let mut state = Some((make(-1.0, 1.0), make(-0.05, 0.05)));
    let first = vector::<B>(vec![0.0; shapes.len()], device);
    timer.time::<B, _>(device, Sync::EachCall, 0, || {
        let (params, momentum_buffer) = state.take().expect("optimizer state");
        let group = SgdGroup {
            params,
            grads: grads.clone(),
            momentum_buffer,
            first: Some(first.clone()),
        };
        let update = step(group, SGD, None);
        state = Some((update.params, update.momentum_buffer));
    })
}

/// `[rows, width]` activations, uniform in `[-1.5, 2.5)`.
fn activations<B: Backend>(rows: usize, width: usize, device: &B::Device) -> FloatTensor<B> {
    uniform::<B>(&[rows, width], -1.5, 2.5, device)
}

/// `[rows, width]` upstream gradients, uniform in `[-1, 1)`.
fn grads<B: Backend>(rows: usize, width: usize, device: &B::Device) -> FloatTensor<B> {
    uniform::<B>(&[rows, width], -1.0, 1.0, device)
}

/// A tensor of shape `dims`, uniform in `[lo, hi)`, drawn on the device.
fn uniform<B: Backend>(dims: &[usize], lo: f64, hi: f64, device: &B::Device) -> FloatTensor<B> {
    let numel = dims.iter().product::<usize>();
    let flat = Tensor::<B, 1>::random([numel], Distribution::Uniform(lo, hi), device);
    B::float_reshape(flat.into_primitive().tensor(), Shape::from(dims.to_vec()))
}

/// An f32 `[len]` tensor of `values`.
fn vector<B: Backend>(values: Vec<f32>, device: &B::Device) -> FloatTensor<B> {
    let len = values.len();
    B::float_from_data(TensorData::new(values, [len]), device)
}

/// A primitive as a `Tensor`.
fn wrap<B: Backend, const D: usize>(p: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(p))
}
