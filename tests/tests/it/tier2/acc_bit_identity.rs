//! With nothing enabled, `Acc<B>` computes exactly what `B` computes, bit for bit.
//!
//! A small CNN with the ops ResNet uses (conv without bias → batch norm → relu → max pool →
//! strided conv → batch norm, plus a strided 1×1 shortcut and a residual add → relu → global
//! average pool → linear → cross entropy) trains for 3 steps of SGD with momentum and then 3 of
//! Adam, on the same host batches, on `Autodiff<B>` and on `Autodiff<Acc<B>>`. Losses, every
//! gradient of every step, and the final parameters and running statistics must be equal byte
//! for byte. Both stacks start from the same weights: every parameter is drawn from one seeded
//! host RNG and uploaded, so neither backend's own RNG is involved.
//!
//! The `Acc` run must also show in `Acc`'s counters: the convolutions, the linear layer, their
//! backward ops, and exactly as many host reads as this test performs.

use burn::backend::wgpu::WgpuDevice;
use burn::backend::{Autodiff, Flex, Wgpu};
use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, GradientsParams, Optimizer, SgdConfig};
use burn::tensor::activation::relu;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};
use burnacc_backend::Acc;
use burnacc_backend::counters::{self, OpCounts};
use burnacc_tests::rng::HostRng;

const SEED: u64 = 2024;
const BATCH: usize = 4;
const CLASSES: usize = 10;
/// Input images are `[BATCH, 3, SIDE, SIDE]`; odd, so padding and pooling hit the borders.
const SIDE: usize = 15;
const SGD_STEPS: usize = 3;
const ADAM_STEPS: usize = 3;

/// conv3×3 → bn → relu → maxpool → (conv3×3 /2 → bn) + conv1×1 /2 → relu → avgpool → linear.
#[derive(Module, Debug)]
struct Net<B: Backend> {
    conv1: Conv2d<B>,
    bn1: BatchNorm<B>,
    pool: MaxPool2d,
    conv2: Conv2d<B>,
    bn2: BatchNorm<B>,
    shortcut: Conv2d<B>,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear<B>,
}

/// A parameter of normal values with standard deviation `std`, drawn from the host RNG.
fn host_param<B: Backend, const D: usize>(
    rng: &mut HostRng,
    shape: [usize; D],
    std: f32,
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let values = rng.normal_vec(shape.iter().product(), std);
    Param::from_data(TensorData::new(values, shape), device)
}

/// He initialisation, std = √(2 / fan_in).
fn he(fan_in: usize) -> f32 {
    (2.0 / fan_in as f32).sqrt()
}

impl<B: Backend> Net<B> {
    fn new(device: &B::Device, rng: &mut HostRng) -> Self {
        let same = PaddingConfig2d::Explicit(1, 1, 1, 1);
        let conv =
            |channels: [usize; 2], kernel: usize, stride: usize, padding: PaddingConfig2d| {
                Conv2dConfig::new(channels, [kernel, kernel])
                    .with_stride([stride, stride])
                    .with_padding(padding)
                    .with_bias(false)
                    .init::<B>(device)
            };
        let mut conv1 = conv([3, 8], 3, 1, same.clone());
        conv1.weight = host_param(rng, [8, 3, 3, 3], he(27), device);
        let mut conv2 = conv([8, 8], 3, 2, same.clone());
        conv2.weight = host_param(rng, [8, 8, 3, 3], he(72), device);
        let mut shortcut = conv([8, 8], 1, 2, PaddingConfig2d::Valid);
        shortcut.weight = host_param(rng, [8, 8, 1, 1], he(8), device);
        let mut fc = LinearConfig::new(8, CLASSES).init::<B>(device);
        fc.weight = host_param(rng, [8, CLASSES], he(8), device);
        fc.bias = Some(host_param(rng, [CLASSES], 0.1, device));
        Self {
            conv1,
            bn1: BatchNormConfig::new(8).init(device),
            pool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(same)
                .init(),
            conv2,
            bn2: BatchNormConfig::new(8).init(device),
            shortcut,
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc,
        }
    }

    /// images `[batch, 3, 15, 15]` → logits `[batch, 10]`.
    fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        let x = relu(self.bn1.forward(self.conv1.forward(images))); // [b, 8, 15, 15]
        let x = self.pool.forward(x); // [b, 8, 8, 8]
        let y = self.bn2.forward(self.conv2.forward(x.clone())); // [b, 8, 4, 4]
        let x = relu(y + self.shortcut.forward(x)); // [b, 8, 4, 4]
        let x = self.avgpool.forward(x); // [b, 8, 1, 1]
        self.fc.forward(x.flatten(1, 3)) // [b, 10]
    }

    /// Folds the running statistics of the last forward into the module state, so that the
    /// visitor sees them.
    fn sync_running_stats(&self) {
        for bn in [&self.bn1, &self.bn2] {
            let _ = bn.running_mean.value_sync();
            let _ = bn.running_var.value_sync();
        }
    }
}

/// A tensor read back to the host: its name, shape and raw bytes.
#[derive(Debug, PartialEq)]
struct Bits {
    name: String,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

/// Counts the host reads it makes, so the test knows exactly how many it performed.
#[derive(Default)]
struct Reader {
    reads: u64,
}

impl Reader {
    fn read<B: Backend, const D: usize>(&mut self, name: String, tensor: Tensor<B, D>) -> Bits {
        self.reads += 1;
        let data = tensor.into_data();
        Bits {
            name,
            shape: data.shape.to_vec(),
            bytes: data.as_bytes().to_vec(),
        }
    }
}

/// Walks a module's float parameters (and running statistics) with their paths.
struct Walk<'a, B: AutodiffBackend> {
    path: Vec<String>,
    reader: &'a mut Reader,
    /// `Some`: read each parameter's gradient; `None`: read each parameter.
    grads: Option<&'a GradientsParams>,
    out: Vec<Bits>,
    _backend: core::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Walk<'_, B> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let name = format!("{}#{}", self.path.join("."), self.out.len());
        let bits = match self.grads {
            Some(grads) => match grads.get::<B::InnerBackend, D>(param.id) {
                Some(grad) => self.reader.read(name, grad),
                // Running statistics have no gradient.
                None => return,
            },
            None => self.reader.read(name, param.val()),
        };
        self.out.push(bits);
    }
}

fn walk<B: AutodiffBackend>(
    model: &Net<B>,
    reader: &mut Reader,
    grads: Option<&GradientsParams>,
) -> Vec<Bits> {
    let mut walk = Walk {
        path: Vec::new(),
        reader,
        grads,
        out: Vec::new(),
        _backend: core::marker::PhantomData,
    };
    model.visit(&mut walk);
    walk.out
}

/// What a training run produced, read back bit for bit.
struct Trace {
    losses: Vec<Bits>,
    grads: Vec<Vec<Bits>>,
    weights: Vec<Bits>,
    /// Host reads this run performed.
    reads: u64,
}

/// A batch: images from a normal distribution, labels uniform over the classes.
fn batch<B: Backend>(rng: &mut HostRng, device: &B::Device) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    let shape = [BATCH, 3, SIDE, SIDE];
    let images = TensorData::new(rng.normal_vec(shape.iter().product(), 1.0), shape);
    let labels: Vec<i64> = (0..BATCH)
        .map(|_| rng.below(CLASSES as u64) as i64)
        .collect();
    (
        Tensor::from_data(images, device),
        Tensor::from_data(TensorData::new(labels, [BATCH]), device),
    )
}

/// 3 steps of SGD with momentum, then 3 of Adam, reading the loss and every gradient each step
/// and the parameters at the end.
fn train<B: AutodiffBackend>(device: &B::Device) -> Trace {
    let mut rng = HostRng::new(SEED);
    let mut model = Net::<B>::new(device, &mut rng);
    let loss_fn = CrossEntropyLossConfig::new().init::<B>(device);
    let mut sgd = SgdConfig::new()
        .with_momentum(Some(MomentumConfig::new().with_momentum(0.9)))
        .init::<B, Net<B>>();
    let mut adam = AdamConfig::new().init::<B, Net<B>>();
    let mut reader = Reader::default();
    let mut trace = Trace {
        losses: Vec::new(),
        grads: Vec::new(),
        weights: Vec::new(),
        reads: 0,
    };

    for step in 0..SGD_STEPS + ADAM_STEPS {
        let (images, labels) = batch::<B>(&mut rng, device);
        let loss = loss_fn.forward(model.forward(images), labels);
        trace
            .losses
            .push(reader.read(format!("loss of step {step}"), loss.clone()));
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        trace.grads.push(walk(&model, &mut reader, Some(&grads)));
        model = if step < SGD_STEPS {
            sgd.step(0.05, model, grads)
        } else {
            adam.step(1e-3, model, grads)
        };
    }
    model.sync_running_stats();
    trace.weights = walk(&model, &mut reader, None);
    trace.reads = reader.reads;
    trace
}

/// Panics naming the first tensor whose bytes differ, with its first differing f32 element.
fn assert_bitwise_equal(what: &str, plain: &[Bits], acc: &[Bits]) {
    assert_eq!(
        plain.len(),
        acc.len(),
        "{what}: different numbers of tensors"
    );
    for (p, a) in plain.iter().zip(acc) {
        assert_eq!(
            (&p.name, &p.shape),
            (&a.name, &a.shape),
            "{what}: tensors out of order"
        );
        if p.bytes != a.bytes {
            let (pv, av) = (f32s(&p.bytes), f32s(&a.bytes));
            let i = pv
                .iter()
                .zip(&av)
                .position(|(x, y)| x.to_bits() != y.to_bits())
                .unwrap_or(0);
            panic!(
                "{what}: `{}` {:?} differs between B and Acc<B>: element {i} is {:e} vs {:e}",
                p.name,
                p.shape,
                pv.get(i).copied().unwrap_or(f32::NAN),
                av.get(i).copied().unwrap_or(f32::NAN)
            );
        }
    }
}

/// The f32 values of `TensorData` bytes (native byte order), for messages.
fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn assert_same_training(plain: &Trace, acc: &Trace) {
    // Equal NaNs would compare equal too: the run must be a real training run.
    for loss in &plain.losses {
        let value = f32s(&loss.bytes)[0];
        assert!(value.is_finite() && value > 0.0, "{}: {value}", loss.name);
    }
    assert_bitwise_equal("losses", &plain.losses, &acc.losses);
    for (step, (p, a)) in plain.grads.iter().zip(&acc.grads).enumerate() {
        assert_bitwise_equal(&format!("gradients of step {step}"), p, a);
    }
    assert_bitwise_equal(
        "final parameters and running statistics",
        &plain.weights,
        &acc.weights,
    );
    // Every gradient of the model was read: 4 weights, the fc bias, 2 × (gamma, beta).
    assert!(
        plain.grads.iter().all(|g| g.len() == 9),
        "expected 9 gradients per step"
    );
    // The final read covers the 9 parameters and 2 × (running mean, running var).
    assert_eq!(
        plain.weights.len(),
        13,
        "expected 13 parameter and state tensors"
    );
}

/// The ops the `Acc` run must have counted, and its host reads.
fn assert_acc_counters(delta: &OpCounts, trace: &Trace) {
    let steps = (SGD_STEPS + ADAM_STEPS) as u64;
    for (op, min) in [
        ("conv2d", 3 * steps),
        ("conv2d_x_backward", 2 * steps),
        ("conv2d_weight_backward", 3 * steps),
        ("linear", steps),
        ("linear_x_backward", steps),
        ("linear_weight_backward", steps),
        ("max_pool2d_with_indices", steps),
        ("max_pool2d_with_indices_backward", steps),
        ("adaptive_avg_pool2d", steps),
        ("adaptive_avg_pool2d_backward", steps),
    ] {
        assert!(
            delta.op(op) >= min,
            "Acc counted {} `{op}`, expected at least {min}; saw {:?}",
            delta.op(op),
            delta.nonzero()
        );
    }
    assert_eq!(
        delta.host_reads(),
        trace.reads,
        "Acc counted {} host reads, the test performed {}; saw {:?}",
        delta.host_reads(),
        trace.reads,
        delta.nonzero()
    );
}

fn check_bit_identity<B: Backend>(device: &B::Device) {
    let before = counters::snapshot();
    let plain = train::<Autodiff<B>>(device);
    let after_plain = counters::snapshot();
    assert_eq!(
        after_plain.since(&before).total_ops(),
        0,
        "the plain stack went through Acc"
    );

    let acc = train::<Autodiff<Acc<B>>>(device);
    let delta = counters::snapshot().since(&after_plain);

    assert_same_training(&plain, &acc);
    assert_acc_counters(&delta, &acc);
}

#[test]
fn acc_flex_is_bit_identical_to_flex() {
    check_bit_identity::<Flex>(&Default::default());
}

#[test]
fn acc_wgpu_is_bit_identical_to_wgpu() {
    check_bit_identity::<Wgpu>(&WgpuDevice::default());
}
