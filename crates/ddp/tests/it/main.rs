//! burnacc-ddp's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod common;
mod tier2 {
    mod killed_peer;
    mod missing_peer;
}
mod tier3 {
    mod local_peers;
    mod process_peers;
}
