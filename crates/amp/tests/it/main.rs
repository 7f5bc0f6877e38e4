//! burnacc-amp's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod common;
mod tier2 {
    mod multi_tensor_route;
    mod optim_reference;
    mod policy_tables;
    mod scaler_injected_inf;
    mod scaler_misuse;
    mod scaler_update;
    mod shared_param;
    mod skip_step;
    mod state_roundtrip;
}
