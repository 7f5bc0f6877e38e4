//! burnacc-bench's tests, one binary: the `bench` binary end to end (tier 3), how its
//! options reach the recipes and how it counts CubeCL's work (tier 2).

/// The trainer tests' tiny recipes (a ResNet-18 of width 8 on generated images).
#[path = "../../../train/tests/it/common/recipes.rs"]
#[allow(dead_code)]
mod common;
mod tier2 {
    mod bench_sets;
    mod device_work;
}
mod tier3 {
    mod bench_harness;
    mod in_place_optimizer;
}
