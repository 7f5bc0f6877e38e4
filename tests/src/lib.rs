//! Shared helpers of the conformance and end-to-end tests, and the tier-2 conformance suite.
//!
//! - [`tolerance`]: the one tolerance table and the element-wise comparison.
//! - [`conformance`]: one generic check per op, run on every backend stack against an f64
//!   reference.
//! - [`rng`]: the seeded host RNG all test data comes from.
//! - [`processes`]: free loopback ports and bounded waits for multi-process tests.

pub mod conformance;
pub mod processes;
pub mod rng;
pub mod tolerance;
