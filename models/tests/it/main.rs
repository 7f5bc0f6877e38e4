//! burnacc-models's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod fixture;

/// Where [`fixture`] finds the committed fixtures.
const FIXTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

mod tier2 {
    mod gradient_parity;
    mod minilm_parity;
    mod params;
    mod pth_import;
    mod reference_export;
    mod resnet;
    mod resnet_import;
    mod swin;
}
