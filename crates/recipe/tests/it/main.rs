//! burnacc-recipe's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod tier1 {
    mod lr_schedules;
    mod model_section;
    mod recipes;
    mod resume_keys;
}
