//! A small seeded host RNG for test inputs.
//!
//! Test data is generated on the host, once, and uploaded to every backend under test and to the
//! reference backend, so all of them see the same numbers. SplitMix64 (Steele, Lea and Flood,
//! "Fast splittable pseudorandom number generators", OOPSLA 2014) is enough for that: the
//! stream is fixed by the seed on every platform, independent of any crate's version.

/// A deterministic stream of random numbers; the same seed gives the same stream everywhere.
#[derive(Clone, Debug)]
pub struct HostRng {
    state: u64,
}

impl HostRng {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits (SplitMix64).
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[low, high)`, rounded to f32 (so the value is exact in f32 and in f64).
    pub fn uniform(&mut self, low: f32, high: f32) -> f32 {
        (low as f64 + (high as f64 - low as f64) * self.next_f64()) as f32
    }

    /// Standard normal (Box–Muller), rounded to f32.
    pub fn normal(&mut self) -> f32 {
        // 1 - u is in (0, 1], so the log is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        ((-2.0 * u1.ln()).sqrt() * (2.0 * core::f64::consts::PI * u2).cos()) as f32
    }

    /// Uniform integer in `[0, high)`.
    pub fn below(&mut self, high: u64) -> u64 {
        assert!(high > 0, "HostRng::below needs a non-empty range");
        self.next_u64() % high
    }

    /// `n` standard normal values times `scale`.
    pub fn normal_vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.normal() * scale).collect()
    }

    /// `n` values uniform in `[low, high)`.
    pub fn uniform_vec(&mut self, n: usize, low: f32, high: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(low, high)).collect()
    }
}
