//! Batch normalisation with PyTorch's running statistics.
//!
//! Burn's `nn::BatchNorm` normalises exactly as `torch.nn.BatchNorm2d` does, but it feeds the
//! *biased* batch variance (divided by `n`) into the running variance, where PyTorch feeds the
//! unbiased one (divided by `n − 1`, `n` = batch × spatial positions). A model trained here then
//! evaluates with a slightly smaller variance than the same model trained in PyTorch: about
//! `1/n` relative, which is 1/8 for a ResNet's last stage at batch 2 and 7 × 7. This module is
//! Burn's with that one difference, and the same fields (`gamma`, `beta`, `running_mean`,
//! `running_var`, `momentum`, `epsilon`), so records, checkpoints and imports are unchanged.

use burn::module::{Content, DisplaySettings, Module, ModuleDisplay, Param, RunningState};
use burn::tensor::Tensor;
use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burnacc_backend::fused;

/// Batch normalisation over `[batch, channels, …]` (channels in dimension 1), `torch.nn.BatchNorm2d`'s
/// semantics: train mode (autodiff backend) normalises with the batch's biased variance and
/// updates `running = (1 − momentum) · running + momentum · batch statistic`, the variance
/// unbiased; inference (no autodiff) normalises with the running statistics. The statistics
/// are computed in the input's dtype, from Burn's `mean_dim`, `sub`, `square`, `div`, `mul` and
/// `add` (the ops Burn's `BatchNorm` uses, so the stacks' rules for them apply unchanged),
/// unless the trainer routes burnacc's fused batch norm for the backend (`[kernels]
/// batch_norm`, `burnacc_backend::fused::batch_norm`): then training mode is one fused op each
/// way, with [`Self::forward_relu`]'s ReLU inside it.
#[derive(Module, Debug)]
#[module(custom_display)]
pub struct BatchNorm<B: Backend> {
    /// Scale γ, `[channels]` (PyTorch's `weight`).
    pub gamma: Param<Tensor<B, 1>>,
    /// Shift β, `[channels]` (PyTorch's `bias`).
    pub beta: Param<Tensor<B, 1>>,
    /// Running mean, `[channels]`.
    pub running_mean: RunningState<Tensor<B, 1>>,
    /// Running (unbiased) variance, `[channels]`.
    pub running_var: RunningState<Tensor<B, 1>>,
    /// Weight of the new batch statistic in the running estimate (PyTorch's default 0.1).
    pub momentum: f64,
    /// Added to the variance before the square root (1e-5).
    pub epsilon: f64,
}

impl<B: Backend> BatchNorm<B> {
    /// γ = 1, β = 0, running mean 0 and variance 1, momentum 0.1, ε = 1e-5 (PyTorch's defaults).
    pub fn new(channels: usize, device: &B::Device) -> Self {
        Self {
            gamma: Param::from_tensor(Tensor::ones([channels], device)),
            beta: Param::from_tensor(Tensor::zeros([channels], device)),
            running_mean: RunningState::new(Tensor::zeros([channels], device)),
            running_var: RunningState::new(Tensor::ones([channels], device)),
            momentum: 0.1,
            epsilon: 1e-5,
        }
    }

    /// Normalises `input` `[batch, channels, …]` (rank ≥ 2); same shape out.
    pub fn forward<const D: usize>(&self, input: Tensor<B, D>) -> Tensor<B, D> {
        self.forward_then(input, false)
    }

    /// `relu(self.forward(input))`, the ReLU fused into the batch norm where its fused op is
    /// routed.
    pub fn forward_relu<const D: usize>(&self, input: Tensor<B, D>) -> Tensor<B, D> {
        self.forward_then(input, true)
    }

    /// The forward, then a ReLU when `then_relu`.
    fn forward_then<const D: usize>(&self, input: Tensor<B, D>, then_relu: bool) -> Tensor<B, D> {
        assert!(
            D >= 2,
            "BatchNorm needs [batch, channels, ...], got rank {D}"
        );
        let output = if B::ad_enabled(&input.device()) {
            match self.forward_train_fused(input.clone(), then_relu) {
                Some(output) => return output,
                None => self.forward_train(input),
            }
        } else {
            let shape = channel_shape::<D>(input.dims()[1]);
            let device = input.device();
            let mean = self.running_mean.value().to_device(&device).reshape(shape);
            let var = self.running_var.value().to_device(&device).reshape(shape);
            self.normalise(input, mean, var)
        };
        if then_relu { relu(output) } else { output }
    }

    /// Training mode as burnacc's fused op (then a ReLU when `then_relu`), when the trainer
    /// routed it for `B`; `None` otherwise.
    fn forward_train_fused<const D: usize>(
        &self,
        input: Tensor<B, D>,
        then_relu: bool,
    ) -> Option<Tensor<B, D>> {
        let count = input.shape().num_elements() / input.dims()[1];
        let (output, mean, var) = fused::batch_norm(
            input,
            self.gamma.val(),
            self.beta.val(),
            self.epsilon,
            then_relu,
        )?;
        self.update_running(mean, var, count);
        Some(output)
    }

    /// `running = (1 − momentum) · running + momentum · batch`, for the batch's per-channel
    /// `mean` and biased `var` (`[channels]`) over `count` values per channel; the running
    /// variance is unbiased, as PyTorch's.
    fn update_running(&self, mean: Tensor<B, 1>, var: Tensor<B, 1>, count: usize) {
        // PyTorch's running variance is unbiased; a single value per channel has none, and
        // PyTorch then stores inf/nan as we do (division by zero).
        let unbiased = count as f64 / (count as f64 - 1.0);
        let device = mean.device();
        let blend = |running: &RunningState<Tensor<B, 1>>, batch: Tensor<B, 1>, scale: f64| {
            let running = running.value_sync().to_device(&device);
            let batch = batch.detach().mul_scalar(self.momentum * scale);
            running.mul_scalar(1.0 - self.momentum).add(batch).detach()
        };
        self.running_mean
            .update(blend(&self.running_mean, mean, 1.0));
        self.running_var
            .update(blend(&self.running_var, var, unbiased));
    }

    fn forward_train<const D: usize>(&self, input: Tensor<B, D>) -> Tensor<B, D> {
        let dims = input.dims();
        let channels = dims[1];
        let count: usize = dims
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 1)
            .map(|(_, d)| d)
            .product();
        let shape = channel_shape::<D>(channels);
        let per_channel = |x: Tensor<B, D>| {
            x.swap_dims(0, 1)
                .reshape([channels, count])
                .mean_dim(1)
                .reshape(shape)
        };
        let mean = per_channel(input.clone());
        let var = per_channel(input.clone().sub(mean.clone()).square());
        self.update_running(
            mean.clone().reshape([channels]),
            var.clone().reshape([channels]),
            count,
        );
        self.normalise(input, mean, var)
    }

    /// `(x − mean) / sqrt(var + ε) · γ + β`, the statistics shaped `[1, channels, 1, …]`.
    fn normalise<const D: usize>(
        &self,
        x: Tensor<B, D>,
        mean: Tensor<B, D>,
        var: Tensor<B, D>,
    ) -> Tensor<B, D> {
        let shape = channel_shape::<D>(x.dims()[1]);
        let std = var.add_scalar(self.epsilon).sqrt();
        x.sub(mean)
            .div(std)
            .mul(self.gamma.val().reshape(shape))
            .add(self.beta.val().reshape(shape))
    }
}

/// `[1, channels, 1, …]`, rank `D`.
fn channel_shape<const D: usize>(channels: usize) -> [usize; D] {
    let mut shape = [1; D];
    shape[1] = channels;
    shape
}

impl<B: Backend> ModuleDisplay for BatchNorm<B> {
    fn custom_settings(&self) -> Option<DisplaySettings> {
        DisplaySettings::new()
            .with_new_line_after_attribute(false)
            .optional()
    }

    fn custom_content(&self, content: Content) -> Option<Content> {
        let [channels] = self.beta.shape().dims();
        content
            .add("channels", &channels)
            .add("momentum", &self.momentum)
            .add("epsilon", &self.epsilon)
            .optional()
    }
}
