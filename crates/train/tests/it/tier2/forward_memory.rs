//! Tier 2: a checkpointed forward pass keeps only the blocks' inputs. The heap still in use
//! after the blocks of a ResNet-18 ran (counted by the test binary's allocator; the test runs
//! in a process of its own, so nothing else allocates meanwhile) is at most 60 % of what the plain
//! blocks keep for backward (measured: 50 %; the basic blocks of a ResNet-18 keep little
//! besides their output under `BalancedCheckpointing`, ResNet-50's bottlenecks 41 %).

use burn::tensor::{Distribution, Tensor};
use burnacc_checkpoint::CheckpointTape;
use burnacc_checkpoint::heap::host_heap;
use burnacc_models::{ResNet, ResNetConfig};
use burnacc_train::stack::CpuAccBackend;

type B = CpuAccBackend;

/// Bytes allocated by the blocks and still in use after them (tape and output alive).
fn retained_by_blocks(model: &ResNet<B>, images: Tensor<B, 4>, checkpointed: bool) -> u64 {
    let mut tape = CheckpointTape::new();
    let mut x = model.stem(images);
    let before = host_heap().0;
    for block in model.blocks() {
        x = if checkpointed {
            tape.checkpoint(block, x, |block, x| block.forward(x))
        } else {
            block.forward(x)
        };
    }
    let retained = host_heap().0.saturating_sub(before);
    drop((x, tape));
    retained
}

#[test]
fn checkpointed_blocks_keep_their_inputs_only() {
    let device = Default::default();
    let model: ResNet<B> = ResNetConfig::resnet18(10).with_base_width(32).init(&device);
    let images = Tensor::<B, 4>::random([8, 3, 128, 128], Distribution::Normal(0.0, 1.0), &device);
    // Warm-up: lazily initialized parameters allocate on first use.
    retained_by_blocks(&model, images.clone(), false);
    let plain = retained_by_blocks(&model, images.clone(), false);
    let checkpointed = retained_by_blocks(&model, images, true);
    println!("kept by the blocks: plain {plain} B, checkpointed {checkpointed} B");
    assert!(
        (checkpointed as f64) <= 0.6 * plain as f64,
        "checkpointed forward keeps {checkpointed} bytes, plain {plain}"
    );
}
