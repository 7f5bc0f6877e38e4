//! Tier 2: a checkpointed block with dropout, on a tape with RNG replay, recomputes the masks
//! it drew in the forward pass: its gradients equal those of the same block run plainly with
//! the same seed. Without replay the recompute draws new masks and the gradients differ, which
//! shows the comparison can fail. Blocks run through the tape unchecked draw as checkpointed
//! ones would at their position, so checkpointing any subset of a chain leaves its gradients
//! unchanged, bit for bit.

use burn::backend::Autodiff;
use burn::backend::flex::{Flex, FlexDevice};
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burnacc_checkpoint::{CheckpointTape, block_seed};
use burnacc_tests::rng::HostRng;

type B = Autodiff<Flex>;

/// Tests of this file one at a time: Flex has one random generator per process, and seeding
/// it in one test while another draws would change that test's masks.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `dropout(linear(x))`: a block whose output depends on random draws.
#[derive(Module, Debug)]
struct NoisyBlock<B: Backend> {
    linear: Linear<B>,
    dropout: Dropout,
}

impl<B: Backend> NoisyBlock<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.dropout.forward(self.linear.forward(x))
    }
}

fn input(device: &FlexDevice) -> Tensor<B, 2> {
    let mut rng = HostRng::new(3);
    let values: Vec<f32> = (0..6 * 16).map(|_| rng.uniform(-1.0, 1.0)).collect();
    Tensor::from_data(TensorData::new(values, [6, 16]), device)
}

/// The gradient of `sum(block(x)²)` with respect to the linear layer's weight, with the block
/// checkpointed on `tape` or run plainly.
fn weight_gradient(
    block: &NoisyBlock<B>,
    x: Tensor<B, 2>,
    tape: Option<CheckpointTape<B>>,
) -> Vec<f32> {
    let params = match tape {
        Some(mut tape) => {
            let y = tape.checkpoint(block, x, |b, x| b.forward(x));
            tape.backward((y.clone() * y).sum(), block)
        }
        None => {
            let y = block.forward(x);
            GradientsParams::from_grads((y.clone() * y).sum().backward(), block)
        }
    };
    let weight = params.get::<Flex, 2>(block.linear.weight.id).unwrap();
    weight.into_data().to_vec().unwrap()
}

#[test]
fn replayed_dropout_masks_give_the_plain_gradients() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let device = Default::default();
    B::seed(&device, 11);
    let block = NoisyBlock::<B> {
        linear: LinearConfig::new(16, 32).init(&device),
        dropout: DropoutConfig::new(0.5).init(),
    };
    // Materialise the lazily initialised weights once, so every run below uses them.
    let block = block.clone().load_record(block.into_record());

    // Plain run with the seed the tape gives its first block.
    let seed = 1234;
    B::seed(&device, block_seed(seed, 0));
    let plain = weight_gradient(&block, input(&device), None);

    let replayed = weight_gradient(
        &block,
        input(&device),
        Some(CheckpointTape::with_rng_replay(seed)),
    );
    assert_eq!(
        replayed, plain,
        "recomputed dropout must reuse the forward pass's masks"
    );

    // Without replay the recompute draws fresh masks: other gradients.
    B::seed(&device, block_seed(seed, 0));
    let fresh = weight_gradient(&block, input(&device), Some(CheckpointTape::new()));
    assert_ne!(
        fresh, plain,
        "a recompute without replay drew the same masks"
    );
}

/// The gradients of `sum(y²)` with respect to every block's weight, `y` the blocks chained,
/// with the blocks `checkpointed` selects checkpointed and the others run through
/// [`CheckpointTape::unchecked`], on a tape replaying from `seed`.
fn chain_gradients(
    blocks: &[NoisyBlock<B>],
    x: Tensor<B, 2>,
    seed: u64,
    checkpointed: &dyn Fn(usize) -> bool,
) -> Vec<Vec<f32>> {
    let device = x.device();
    // What the trainer does at the start of a step: the draws before the first block do not
    // depend on what earlier recomputes drew.
    B::seed(&device, seed);
    let mut tape = CheckpointTape::with_rng_replay(seed);
    let mut x = x;
    for (i, block) in blocks.iter().enumerate() {
        x = if checkpointed(i) {
            tape.checkpoint(block, x, |b, x| b.forward(x))
        } else {
            tape.unchecked(block, x, |b, x| b.forward(x))
        };
    }
    let model = Chain {
        blocks: blocks.to_vec(),
    };
    let params = tape.backward((x.clone() * x).sum(), &model);
    blocks
        .iter()
        .map(|b| {
            let weight = params.get::<Flex, 2>(b.linear.weight.id).unwrap();
            weight.into_data().to_vec().unwrap()
        })
        .collect()
}

/// The blocks as one module, for the tape to collect their gradients.
#[derive(Module, Debug)]
struct Chain<B: Backend> {
    blocks: Vec<NoisyBlock<B>>,
}

#[test]
fn checkpointing_any_blocks_leaves_dropout_and_gradients_unchanged() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let device = Default::default();
    B::seed(&device, 5);
    let blocks: Vec<NoisyBlock<B>> = (0..4)
        .map(|_| {
            let block = NoisyBlock::<B> {
                linear: LinearConfig::new(16, 16).init(&device),
                dropout: DropoutConfig::new(0.3).init(),
            };
            block.clone().load_record(block.into_record())
        })
        .collect();
    let seed = 99;
    let none = chain_gradients(&blocks, input(&device), seed, &|_| false);
    let all = chain_gradients(&blocks, input(&device), seed, &|_| true);
    let some = chain_gradients(&blocks, input(&device), seed, &|i| i % 2 == 1);
    assert_eq!(all, none, "every block checkpointed");
    assert_eq!(some, none, "blocks 1 and 3 checkpointed");

    // Another seed draws other masks: the comparison can fail.
    let other = chain_gradients(&blocks, input(&device), seed + 1, &|_| false);
    assert_ne!(other, none, "another seed drew the same masks");
}
