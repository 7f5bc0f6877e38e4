//! Tier 2: a checkpointed block with dropout, on a tape with RNG replay, recomputes the masks
//! it drew in the forward pass: its gradients equal those of the same block run plainly with
//! the same seed. Without replay the recompute draws new masks and the gradients differ, which
//! shows the comparison can fail.

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
