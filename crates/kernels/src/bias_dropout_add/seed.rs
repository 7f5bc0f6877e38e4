//! The dropout seed: two 31-bit words, held on the host as [`DropoutSeed`] and on the device as
//! an Int tensor `[2]` that the kernels read themselves.
//!
//! Inside training the seed is drawn on the device by the backend's generator
//! ([`dropout_seed`]), so that no call reads anything back to the host, every call gets a fresh
//! mask, and re-seeding the generator (`B::seed(device, s)`, as gradient checkpointing does
//! before a block and before its recompute) replays the same seeds, hence the same masks. The
//! autodiff node keeps that tiny tensor and the backward kernel reads it again.
//!
//! Why 31-bit words in an Int tensor: the seed must survive every backend's int element (i32 on
//! wgpu and CUDA, i64 on the CPU backends, possibly u32/u64) unchanged, and Burn's
//! `Distribution::Uniform(0, 2³¹ − 1)` is what every backend can draw into it: values in
//! `[0, 2³¹)` are exact in all of them, with no sign question on the way to the kernels' u32
//! arithmetic. (CubeCL backends draw a uniform f32 and scale it, so their words carry 24 random
//! bits each; the CPU backends draw all 31.)
//!
//! A host `u64` seed (tests, reproducible runs) is mapped to the words by a bijective 64-bit
//! mixer, SplitMix64's finalizer (Steele, Lea & Flood, 2014), keeping 62 of its bits: distinct
//! u64 seeds collide only by chance (probability 2⁻⁶²), never by structure (e.g. seeds that
//! differ in their top bits only).

use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Int, Tensor, TensorData};

/// Exclusive upper bound of a seed word: `2³¹`.
pub const SEED_WORD_LIMIT: u32 = 1 << 31;

/// Number of words of a seed, i.e. the length of the seed tensor.
pub const SEED_WORDS: usize = 2;

/// A dropout seed as the kernels read it: two words in `[0, 2³¹)`. The mask is MurmurHash3 of
/// `word₀ ‖ word₁ ‖ index` (see [`super::mask`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DropoutSeed {
    words: [u32; SEED_WORDS],
}

impl DropoutSeed {
    /// The seed of the given words; panics unless both lie in `[0, 2³¹)`.
    pub fn from_words(words: [u32; SEED_WORDS]) -> Self {
        assert!(
            words.iter().all(|&w| w < SEED_WORD_LIMIT),
            "bias_dropout_add: dropout seed words must lie in [0, 2^31), got {words:?}"
        );
        Self { words }
    }

    /// The two words, each in `[0, 2³¹)`.
    pub fn words(self) -> [u32; SEED_WORDS] {
        self.words
    }

    /// The seed of a host `u64`: SplitMix64's finalizer (a bijection of u64), then its low 62
    /// bits as two 31-bit words, low word first.
    pub fn from_u64(seed: u64) -> Self {
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let mask = u64::from(SEED_WORD_LIMIT - 1);
        Self::from_words([(z & mask) as u32, ((z >> 31) & mask) as u32])
    }

    /// The seed held by `data` (the values of a seed tensor, any integer dtype); panics unless
    /// it has exactly two values, both in `[0, 2³¹)`.
    pub fn from_data(data: &TensorData) -> Self {
        let values: Vec<i64> = data.iter::<i64>().collect();
        let words: [i64; SEED_WORDS] = values.as_slice().try_into().unwrap_or_else(|_| {
            panic!("bias_dropout_add: a dropout seed has 2 values, got {values:?}")
        });
        assert!(
            words
                .iter()
                .all(|&w| (0..i64::from(SEED_WORD_LIMIT)).contains(&w)),
            "bias_dropout_add: dropout seed words must lie in [0, 2^31), got {words:?}"
        );
        Self::from_words(words.map(|w| w as u32))
    }

    /// Reads a seed tensor back to the host. This synchronises with the device: for tests and
    /// the reference (CPU) path only, never inside a training step.
    pub fn from_tensor<B: Backend>(seed: Tensor<B, 1, Int>) -> Self {
        Self::from_data(&seed.into_data())
    }

    /// The seed tensor `[2]` of these words on `device`, in its default int dtype (an upload,
    /// no synchronisation).
    pub fn to_tensor<B: Backend>(self, device: &B::Device) -> Tensor<B, 1, Int> {
        let words = self.words.map(|w| w as i32);
        Tensor::from_data(TensorData::new(words.to_vec(), [SEED_WORDS]), device)
    }
}

impl From<u64> for DropoutSeed {
    /// [`DropoutSeed::from_u64`].
    fn from(seed: u64) -> Self {
        Self::from_u64(seed)
    }
}

/// Draws a fresh dropout seed on `device` with the backend's random generator: an Int tensor
/// `[2]` of words uniform in `[0, 2³¹ − 1)`, in the device's default int dtype. Nothing is read
/// back; the draw is deterministic after `B::seed(device, s)` (the same sequence of draws
/// follows each re-seeding, which is what gradient checkpointing's replay relies on).
///
/// Draw one per dropout call and pass it to [`super::bias_dropout_add_device_seed`].
pub fn dropout_seed<B: Backend>(device: &B::Device) -> Tensor<B, 1, Int> {
    // The bound is 2³¹ − 1, not 2³¹: the CPU backends convert it to their int element, and
    // 2³¹ does not fit an i32 (Flex's). The CubeCL backends round it to 2³¹ in f32, and their
    // largest draw is 2³¹ − 128.
    let high = f64::from(SEED_WORD_LIMIT - 1);
    Tensor::random([SEED_WORDS], Distribution::Uniform(0.0, high), device)
}
