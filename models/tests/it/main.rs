//! burnacc-models's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod tier2 {
    mod minilm_parity;
    mod params;
    mod resnet;
    mod resnet_import;
    mod swin;
}
