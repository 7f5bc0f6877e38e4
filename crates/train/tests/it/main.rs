//! burnacc-train's tests, one binary. Each test runs in a process of its own under
//! `cargo nextest` (scripts/test.sh), so tests that read the heap counters or seed a device's
//! generator see only their own work.

/// Counts host heap bytes (peak memory of CPU runs, retained activations).
#[global_allocator]
static ALLOCATOR: burnacc_checkpoint::heap::CountingAllocator =
    burnacc_checkpoint::heap::CountingAllocator;

mod common;
/// The models' reference fixtures and their reader, shared with burnacc-models' tests (which
/// use more of it).
#[path = "../../../../models/tests/it/fixture.rs"]
#[allow(dead_code)]
mod fixture;
/// Where [`fixture`] finds the committed fixtures.
const FIXTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/tests/fixtures");
mod tier2 {
    mod autocast_ops;
    mod bert_packing;
    mod device_prefetch;
    mod forward_memory;
    mod launch_plan;
    mod nonfinite_step;
    mod recipes;
    mod reference_bf16;
    mod resnet_blocks;
    mod run_dir;
}
mod tier3 {
    mod accumulate;
    mod amp_training;
    mod batch_norm_route;
    mod checkpoint_training;
    mod corrupt_images;
    mod curves;
    mod ddp_step;
    mod evaluation;
    mod imported_weights;
    mod kernel_routes;
    mod launch;
    mod linear_rows;
    mod nonfinite;
    mod optimizer_kernels;
    mod profile_trace;
    mod resume;
    mod softmax_route;
    mod swin_kernel_routes;
    mod swin_training;
    mod text_training;
    mod train_modes;
}
