//! Tier 2: a ResNet whose blocks (all, or some) are checkpointed computes the same loss, gradients and
//! batch-norm running statistics as the plain ResNet, in f32 and under bf16 autocast.

use burn::backend::Autodiff;
use burn::backend::flex::Flex;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{FloatDType, Int, Tensor, TensorData};
use burnacc_backend::autocast::autocast;
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_models::{ResNet, ResNetConfig};
use burnacc_tests::rng::HostRng;
use burnacc_train::stack::CpuAccBackend;
use burnacc_train::trainer::forward_selected;

use crate::common::Collect;

/// Deterministic values in [-1, 1), from the host (tests run in parallel and share the
/// backend's RNG).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = HostRng::new(seed);
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

/// One training step's loss, gradients and model tensors after the forward pass, from the
/// weights of `base` (a copy with its own running statistics).
fn step<B: CheckpointBackend>(
    base: &ResNet<B>,
    checkpointed: Option<&dyn Fn(usize) -> bool>,
    amp: Option<FloatDType>,
) -> (f32, Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let device = Default::default();
    let model: ResNet<B> = config()
        .init(&device)
        .load_record(base.clone().into_record());
    let images = Tensor::<B, 4>::from_data(
        TensorData::new(values(4 * 3 * 32 * 32, 1), [4, 3, 32, 32]),
        &device,
    );
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![0i64, 3, 1, 4], [4]), &device);
    let guard = amp.map(|d| autocast(d).unwrap());
    let mut tape = CheckpointTape::new();
    let logits = match checkpointed {
        Some(select) => forward_selected(&model, images, &mut tape, select),
        None => model.forward(images),
    };
    let loss = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits, labels);
    drop(guard);
    let expected = checkpointed.map_or(0, |select| (0..8).filter(|&i| select(i)).count());
    assert_eq!(tape.len(), expected);
    let value = loss.clone().into_data().iter::<f32>().next().unwrap();
    let mut grads = tape.backward(loss, &model);
    let mut collect = Collect::new(&mut grads);
    model.visit(&mut collect);
    (value, collect.gradients, collect.values)
}

fn assert_same(what: &str, a: &[Vec<f32>], b: &[Vec<f32>]) {
    assert_eq!(a.len(), b.len(), "{what}: number of tensors");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.len(), y.len(), "{what} {i}: length");
        for (j, (p, q)) in x.iter().zip(y).enumerate() {
            let tolerance = 1e-6 * p.abs().max(q.abs()).max(1e-3);
            assert!((p - q).abs() <= tolerance, "{what} {i}[{j}]: {p} vs {q}");
        }
    }
}

fn config() -> ResNetConfig {
    ResNetConfig::resnet18(5).with_base_width(8)
}

fn same_as_plain<B: CheckpointBackend>(amp: Option<FloatDType>) {
    same_as_plain_with::<B>(amp, &|_| true);
}

/// [`same_as_plain`] with the blocks `select` picks checkpointed.
fn same_as_plain_with<B: CheckpointBackend>(
    amp: Option<FloatDType>,
    select: &dyn Fn(usize) -> bool,
) {
    // Initialized once: clones of a lazily initialized parameter would each draw their own.
    let base = config().init::<B>(&Default::default());
    let base = config()
        .init::<B>(&Default::default())
        .load_record(base.into_record());
    let (loss, grads, values) = step::<B>(&base, None, amp);
    let (loss_c, grads_c, values_c) = step::<B>(&base, Some(select), amp);
    assert_eq!(loss, loss_c, "loss");
    // Every parameter got a gradient (20 convolutions and batch norms, the head).
    assert_eq!(grads.len(), 62);
    assert_same("gradient", &grads, &grads_c);
    // Running statistics were updated once, not again by the recompute.
    assert_same("parameter or running statistic", &values, &values_c);
}

#[test]
fn checkpointed_blocks_give_the_plain_gradients_on_autodiff() {
    same_as_plain::<Autodiff<Flex>>(None);
}

#[test]
fn checkpointed_blocks_give_the_plain_gradients_on_acc() {
    same_as_plain::<CpuAccBackend>(None);
}

#[test]
fn checkpointed_blocks_give_the_plain_gradients_under_autocast() {
    same_as_plain::<CpuAccBackend>(Some(FloatDType::BF16));
}

#[test]
fn some_checkpointed_blocks_give_the_plain_gradients() {
    // Plain blocks between checkpointed ones are back-propagated as segments of the tape.
    same_as_plain_with::<CpuAccBackend>(None, &|i| i % 2 == 1);
    same_as_plain_with::<CpuAccBackend>(None, &|i| i % 2 == 0);
    same_as_plain_with::<Autodiff<Flex>>(None, &|i| i >= 5);
}
