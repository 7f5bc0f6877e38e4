//! The tensors and hyper-parameters of one multi-tensor optimizer step.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// Adam/AdamW hyper-parameters, as `torch.optim.Adam`/`AdamW` (`capturable=True`,
/// `amsgrad=False`). The learning rate is the step's (a schedule changes it every step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamHyper {
    /// Learning rate of this step.
    pub lr: f64,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay (0 disables it).
    pub weight_decay: f64,
    /// `true`: decoupled decay `p·(1 − lr·wd)` (AdamW); `false`: L2, `g + wd·p` (Adam).
    pub decoupled: bool,
}

/// The tensors of one Adam/AdamW step over `n` parameters:
///
/// ```text
/// g  = grad + wd·p                  (Adam with weight decay)
/// p  = p·(1 − lr·wd)                (AdamW)
/// m' = beta1·m + (1 − beta1)·g
/// v' = beta2·v + (1 − beta2)·g²
/// p' = p − step_size·m' / (sqrt(v') / bc2_sqrt + eps)
/// ```
///
/// `params`, `grads`, `exp_avg` (`m`), `exp_avg_sq` (`v`): `n` tensors each, `i`-th ones of
/// one shape, all of one float dtype. The per-tensor bias corrections, for the step count `t`
/// each parameter reaches with this step, are f32 `[n]`: `step_size[i] = lr / (1 − beta1^t)`
/// and `bc2_sqrt[i] = sqrt(1 − beta2^t)`.
#[derive(Debug)]
pub struct AdamGroup<B: Backend> {
    /// Parameters.
    pub params: Vec<FloatTensor<B>>,
    /// Their gradients.
    pub grads: Vec<FloatTensor<B>>,
    /// First moments.
    pub exp_avg: Vec<FloatTensor<B>>,
    /// Second moments.
    pub exp_avg_sq: Vec<FloatTensor<B>>,
    /// f32 `[n]`: `lr / (1 − beta1^t)`.
    pub step_size: FloatTensor<B>,
    /// f32 `[n]`: `sqrt(1 − beta2^t)`.
    pub bc2_sqrt: FloatTensor<B>,
}

/// The result of an Adam step: `n` tensors each, shaped and typed like the inputs.
#[derive(Debug)]
pub struct AdamUpdate<B: Backend> {
    /// New parameters.
    pub params: Vec<FloatTensor<B>>,
    /// New first moments.
    pub exp_avg: Vec<FloatTensor<B>>,
    /// New second moments.
    pub exp_avg_sq: Vec<FloatTensor<B>>,
}

/// SGD hyper-parameters, as `torch.optim.SGD`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdHyper {
    /// Learning rate of this step.
    pub lr: f64,
    /// Momentum (0: no buffer).
    pub momentum: f64,
    /// Dampening of the gradient in the buffer.
    pub dampening: f64,
    /// L2 weight decay added to the gradient (0 disables it).
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
}

/// The tensors of one SGD step over `n` parameters:
///
/// ```text
/// g    = grad + wd·p                                  (if wd != 0)
/// buf' = g  if first[i] > 0  else  momentum·buf + (1 − dampening)·g
/// d    = g + momentum·buf'  if nesterov  else  buf'   (momentum != 0; else d = g)
/// p'   = p − lr·d
/// ```
///
/// `momentum_buffer` is empty and `first` is `None` when the momentum is 0.
#[derive(Debug)]
pub struct SgdGroup<B: Backend> {
    /// Parameters.
    pub params: Vec<FloatTensor<B>>,
    /// Their gradients.
    pub grads: Vec<FloatTensor<B>>,
    /// Momentum buffers (`n` tensors, or none without momentum).
    pub momentum_buffer: Vec<FloatTensor<B>>,
    /// f32 `[n]`: `> 0` where the buffer starts at this step (PyTorch's `buf = clone(g)`).
    pub first: Option<FloatTensor<B>>,
}

/// The result of an SGD step: `n` tensors each (no buffers without momentum).
#[derive(Debug)]
pub struct SgdUpdate<B: Backend> {
    /// New parameters.
    pub params: Vec<FloatTensor<B>>,
    /// New momentum buffers.
    pub momentum_buffer: Vec<FloatTensor<B>>,
}

impl<B: Backend> AdamGroup<B> {
    /// Number of parameter tensors; panics unless every list has that length.
    pub fn len(&self) -> usize {
        let n = self.params.len();
        assert!(
            self.grads.len() == n && self.exp_avg.len() == n && self.exp_avg_sq.len() == n,
            "multi_tensor_adam: {n} params but {} grads, {} exp_avg, {} exp_avg_sq",
            self.grads.len(),
            self.exp_avg.len(),
            self.exp_avg_sq.len()
        );
        n
    }

    /// Whether the group has no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<B: Backend> SgdGroup<B> {
    /// Number of parameter tensors; panics unless the lists agree (buffers: `n` or none).
    pub fn len(&self) -> usize {
        let n = self.params.len();
        assert!(
            self.grads.len() == n
                && (self.momentum_buffer.is_empty() || self.momentum_buffer.len() == n),
            "multi_tensor_sgd: {n} params but {} grads, {} momentum buffers",
            self.grads.len(),
            self.momentum_buffer.len()
        );
        n
    }

    /// Whether the group has no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
