//! Counter readings of the tier-2 CubeCL tests, taken before and after the work a test checks
//! (cargo-nextest runs each test in a process of its own, so the growth is exactly the test's).

/// How much each reading of `read` grew since `before`, an earlier call of `read`.
pub fn growth<const N: usize>(read: impl Fn() -> [u64; N], before: [u64; N]) -> [u64; N] {
    let now = read();
    std::array::from_fn(|i| now[i] - before[i])
}
