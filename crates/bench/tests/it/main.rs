//! burnacc-bench's tests, one binary: the `bench` binary end to end (tier 3) and how its
//! options reach the recipes (tier 2).

/// The trainer tests' tiny recipes (a ResNet-18 of width 8 on generated images).
#[path = "../../../train/tests/it/common/recipes.rs"]
#[allow(dead_code)]
mod common;
mod tier2 {
    mod bench_sets;
}
mod tier3 {
    mod bench_harness;
    mod in_place_optimizer;
}
