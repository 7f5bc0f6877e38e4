//! [`CheckpointTape`]: checkpointed blocks of one forward pass, and the backward pass that
//! recomputes them.

use crate::backend::{CheckpointBackend, NodeKey};
use crate::restore::{Buffers, accumulate, materialize};
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorPrimitive};
use burnacc_backend::autocast::{autocast, autocast_dtype};

/// A gradient on the inner backend.
type Grad<B> = FloatTensor<<B as AutodiffBackend>::InnerBackend>;

/// Recomputes a block and back-propagates its output's gradient through it: the gradients of
/// that backward pass, and the gradient of the block's input (`None` when untracked).
type BlockBackward<B> =
    Box<dyn FnOnce(Grad<B>) -> (<B as AutodiffBackend>::Gradients, Option<Grad<B>>)>;

/// Back-propagates the gradient of a block's input through the recorded ops that produced it.
type SegmentBackward<B> = Box<dyn FnOnce(Grad<B>) -> <B as AutodiffBackend>::Gradients>;

/// Reads the gradient of a block's output from the backward pass of what followed it.
type OutputGrad<B> = Box<dyn Fn(&<B as AutodiffBackend>::Gradients) -> Option<Grad<B>>>;

/// One checkpointed block.
struct Entry<B: AutodiffBackend> {
    block_backward: BlockBackward<B>,
    /// `None` when the block's input is the previous block's output itself (nothing recorded
    /// in between) or is untracked.
    segment_backward: Option<SegmentBackward<B>>,
    output_grad: OutputGrad<B>,
}

/// The checkpointed blocks of one forward pass (PyTorch's `torch.utils.checkpoint`, TorchAcc's
/// `checkpoint`), and the backward pass that recomputes them.
///
/// ```text
/// let mut tape = CheckpointTape::new();
/// let mut x = model.stem(images);
/// for block in model.blocks() {
///     x = tape.checkpoint(block, x, |block, x| block.forward(x));
/// }
/// let loss = loss_fn.forward(model.head(x), labels);
/// let grads: GradientsParams = tape.backward(loss, &model);
/// ```
///
/// [`checkpoint`](Self::checkpoint) runs a block without recording it and keeps only its
/// input; [`backward`](Self::backward) walks the blocks in reverse, recomputes each one with
/// autodiff and back-propagates through it and through the recorded ops between blocks, one
/// backward call per piece. The gradients equal those of the same forward pass without
/// checkpointing, to the rounding of the backend (bit for bit on the CPU).
///
/// Why a tape and not a custom autodiff node that recomputes inside the outer backward pass:
/// Burn 0.21's autodiff holds the graph's lock while it runs a backward pass, and every
/// backward pass ends by locking every graph to clean up, so a backward pass started inside
/// another one deadlocks.
pub struct CheckpointTape<B: CheckpointBackend> {
    entries: Vec<Entry<B>>,
    /// The node of the last block's output, to recognise it as the next block's input.
    last_output: Option<NodeKey>,
    /// With RNG replay: the seed blocks' seeds derive from.
    rng_seed: Option<u64>,
    /// Blocks run through the tape so far, checkpointed or not: the index of the next one's
    /// seed.
    blocks_seen: usize,
}

impl<B: CheckpointBackend> Default for CheckpointTape<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: CheckpointBackend> CheckpointTape<B> {
    /// An empty tape.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            last_output: None,
            rng_seed: None,
            blocks_seen: 0,
        }
    }

    /// An empty tape that replays random draws: before the `k`-th block run through the tape
    /// (by [`checkpoint`](Self::checkpoint) or [`unchecked`](Self::unchecked)) runs, and again
    /// before a checkpointed one is recomputed, the device's generator is seeded with
    /// [`block_seed`]`(seed, k)`, so dropout inside the block draws the same masks both times
    /// (PyTorch's `preserve_rng_state`, which saves and restores the generator's state;
    /// Burn 0.21 can set a backend's generator but not read it back). Since every block is
    /// seeded by its position, a model draws the same values whichever of its blocks are
    /// checkpointed.
    pub fn with_rng_replay(seed: u64) -> Self {
        Self {
            rng_seed: Some(seed),
            ..Self::new()
        }
    }

    /// Number of blocks checkpointed so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no block was checkpointed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `forward(block, input)`, checkpointed.
    ///
    /// input: any shape `[..; D]`, any float dtype → `forward`'s output `[..; E]`, a fresh
    /// leaf of the graph (what follows is recorded from it). Nothing inside the block is
    /// recorded; the tape keeps `input`.
    ///
    /// - Autocast: the recompute runs under the autocast dtype on now.
    /// - Buffers: batch norm's running statistics are updated once, by this forward pass; the
    ///   recompute's update is undone.
    /// - The recompute must give the output's shape and dtype again, or backward panics
    ///   naming both (a block whose forward depends on state that changed in between).
    /// - Random ops inside the block (dropout) draw the same values on recompute only with
    ///   [`with_rng_replay`](Self::with_rng_replay); a plain tape draws new ones.
    pub fn checkpoint<M, F, const D: usize, const E: usize>(
        &mut self,
        block: &M,
        input: Tensor<B, D>,
        forward: F,
    ) -> Tensor<B, E>
    where
        M: Module<B> + 'static,
        F: Fn(&M, Tensor<B, D>) -> Tensor<B, E> + 'static,
    {
        let autocast_at_forward = autocast_dtype();
        let replay = self.seed_next_block(&input.device());
        materialize(block);
        // Burn's `detach` keeps a leaf's `require_grad`: the input must be untracked for the
        // forward pass not to be recorded.
        let untracked = input.clone().detach().set_require_grad(false);
        let output = forward(&block.clone().no_grad(), untracked);
        let (shape, dtype) = (output.shape(), output.dtype());
        let output = Tensor::<B, E>::from_inner(output.inner()).require_grad();

        let input_primitive = input.clone().into_primitive().tensor();
        let tracked = B::is_tracked(&input_primitive);
        let input_key = B::node_key(&input_primitive);
        let follows_last = self.last_output == Some(input_key);
        self.last_output = Some(B::node_key(&output.clone().into_primitive().tensor()));

        let saved = input.clone().inner();
        let block = block.clone();
        let block_backward: BlockBackward<B> = Box::new(move |grad_output| {
            let _autocast =
                autocast_at_forward.map(|d| autocast(d).expect("it was on at the forward pass"));
            if let Some((device, seed)) = &replay {
                B::seed(device, *seed);
            }
            let buffers = Buffers::save(&block);
            let input = Tensor::<B, D>::from_inner(saved);
            let input = if tracked { input.require_grad() } else { input };
            let output = forward(&block, input.clone());
            assert!(
                output.shape() == shape && output.dtype() == dtype,
                "checkpoint: the recomputed block gave {:?} {:?}, the forward pass gave {shape:?} {dtype:?}",
                output.shape(),
                output.dtype(),
            );
            let grad_output = to_tensor::<B, E>(grad_output).cast(dtype);
            // d(sum(y ⊙ g)) = gᵀ dy: back-propagates g from y.
            let grads = (output * grad_output).sum().backward();
            Buffers::restore(buffers, block);
            let grad_input = tracked.then(|| {
                let grad = input
                    .grad(&grads)
                    .expect("the recomputed block reads its input");
                grad.into_primitive().tensor()
            });
            (grads, grad_input)
        });
        let segment_backward: Option<SegmentBackward<B>> = (tracked && !follows_last).then(|| {
            let input = input.clone();
            Box::new(move |grad: Grad<B>| {
                let grad = to_tensor::<B, D>(grad).cast(input.dtype());
                (input * grad).sum().backward()
            }) as SegmentBackward<B>
        });
        let leaf = output.clone();
        self.entries.push(Entry {
            block_backward,
            segment_backward,
            output_grad: Box::new(move |grads| {
                leaf.grad(grads).map(|g| g.into_primitive().tensor())
            }),
        });
        output
    }

    /// `forward(block, input)` recorded as usual, not checkpointed, with the block's random
    /// draws seeded as [`checkpoint`](Self::checkpoint) would seed them at this position (on a
    /// tape with RNG replay), so that checkpointing a block or not leaves every draw of the
    /// forward pass unchanged.
    pub fn unchecked<M, F, const D: usize, const E: usize>(
        &mut self,
        block: &M,
        input: Tensor<B, D>,
        forward: F,
    ) -> Tensor<B, E>
    where
        F: FnOnce(&M, Tensor<B, D>) -> Tensor<B, E>,
    {
        self.seed_next_block(&input.device());
        forward(block, input)
    }

    /// With RNG replay, seeds `device`'s generator for the next block and returns the device
    /// and seed to replay it with; counts the block either way.
    fn seed_next_block(&mut self, device: &B::Device) -> Option<(B::Device, u64)> {
        let index = self.blocks_seen;
        self.blocks_seen += 1;
        let seed = block_seed(self.rng_seed?, index);
        B::seed(device, seed);
        Some((device.clone(), seed))
    }

    /// Back-propagates `loss` through everything recorded and every checkpointed block, and
    /// returns the gradients of `model`'s parameters (summed over the pieces of the graph that
    /// use them), as `GradientsParams::from_grads(loss.backward(), model)` would without
    /// checkpointing.
    pub fn backward<M: AutodiffModule<B>>(self, loss: Tensor<B, 1>, model: &M) -> GradientsParams {
        let mut total = GradientsParams::new();
        let grads = loss.backward();
        accumulate(&mut total, &grads, model);
        let mut after = Some(grads);
        let mut handed: Option<Grad<B>> = None;
        for entry in self.entries.into_iter().rev() {
            let grad_output = match handed.take() {
                Some(grad) => Some(grad),
                None => after.as_ref().and_then(|grads| (entry.output_grad)(grads)),
            };
            // An output nothing depended on has no gradient: neither has anything before it
            // through this path.
            let Some(grad_output) = grad_output else {
                after = None;
                continue;
            };
            let (grads, grad_input) = (entry.block_backward)(grad_output);
            accumulate(&mut total, &grads, model);
            after = None;
            match (grad_input, entry.segment_backward) {
                (Some(grad), Some(segment)) => {
                    let grads = segment(grad);
                    accumulate(&mut total, &grads, model);
                    after = Some(grads);
                }
                (Some(grad), None) => handed = Some(grad),
                (None, _) => {}
            }
        }
        total
    }
}

/// A gradient primitive as a tensor of rank `D`.
fn to_tensor<B: AutodiffBackend, const D: usize>(grad: Grad<B>) -> Tensor<B, D> {
    Tensor::from_inner(Tensor::from_primitive(TensorPrimitive::Float(grad)))
}

/// The seed of the `index`-th block of a tape replaying from `seed` (SplitMix64 of both, so
/// neighbouring blocks and steps get unrelated streams).
pub fn block_seed(seed: u64, index: usize) -> u64 {
    let mut z = seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
