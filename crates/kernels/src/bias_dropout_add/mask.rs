//! The dropout keep-mask as a pure function of `(seed, element index)`, on the host.
//!
//! The mask is never stored: the CubeCL kernels evaluate the same function per element, in the
//! forward and again in the backward, so the backward needs only the seed and `p`. This file is
//! the host twin of `kernel::keep`; both must stay bit-identical, which is why the function uses
//! only wrapping 32-bit integer arithmetic (multiply, add, xor, shifts), defined the same way in
//! Rust, WGSL, CUDA C++ and every other CubeCL target.
//!
//! The hash is MurmurHash3_x86_32 (Austin Appleby, public domain, `MurmurHash3.cpp` of
//! SMHasher) with murmur seed 0 over the 12-byte message `word₀ ‖ word₁ ‖ index`, each a
//! little-endian u32 (`word₀`, `word₁` the two 31-bit words of the [`DropoutSeed`], `index`
//! the element's row-major linear index in `[..., width]`). The two seed blocks do not depend
//! on the element: their state is the `key` ([`dropout_key`]), which the kernels fold from the
//! seed tensor they read; per element they then mix one block and finalize.
//!
//! An element is kept when `hash ≥ threshold`, `threshold = ⌊p · 2³²⌋`
//! ([`dropout_threshold`]), i.e. with probability `1 − threshold / 2³² ≈ 1 − p`.
//!
//! The host functions take any `impl Into<DropoutSeed>`: a [`DropoutSeed`] (e.g. read back
//! from a device seed tensor with [`DropoutSeed::from_tensor`]) or a host `u64`.

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};

use super::seed::DropoutSeed;

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// Message length in bytes of the per-element hash: `word₀`, `word₁`, `index`.
pub(crate) const MESSAGE_BYTES: u32 = 12;

/// Largest element count the mask can index: the element index is a u32.
pub const MAX_MASK_ELEMENTS: u64 = 1 << 32;

/// One MurmurHash3_x86_32 body step: mixes the 4-byte block `k` into the state `h`.
/// (`rotate_left` is a pair of shifts; kernels write it as `(x << r) | (x >> (32 − r))`.)
fn murmur3_block(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

/// MurmurHash3's finalizer (`fmix32`): makes every output bit depend on every input bit.
fn murmur3_fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// MurmurHash3_x86_32 of a message made of whole little-endian u32 words, with murmur seed
/// `seed`. Exposed so that the implementation can be checked against published test vectors.
pub fn murmur3_x86_32(seed: u32, words: &[u32]) -> u32 {
    let h = words.iter().fold(seed, |h, &k| murmur3_block(h, k));
    murmur3_fmix32(h ^ (4 * words.len() as u32))
}

/// The per-seed part of the hash: the MurmurHash3 state after the blocks `word₀`, `word₁`.
/// The kernels compute the same from the seed tensor (`kernel::dropout_key`).
pub fn dropout_key(seed: impl Into<DropoutSeed>) -> u32 {
    let [w0, w1] = seed.into().words();
    murmur3_block(murmur3_block(0, w0), w1)
}

/// The uniform 32-bit draw of element `index`: MurmurHash3_x86_32 of
/// `word₀ ‖ word₁ ‖ index`, from the [`dropout_key`] of the seed.
pub fn dropout_hash(key: u32, index: u32) -> u32 {
    murmur3_fmix32(murmur3_block(key, index) ^ MESSAGE_BYTES)
}

/// `⌊p · 2³²⌋`: an element is dropped when its hash is below it. Panics unless `0 ≤ p < 1`.
pub fn dropout_threshold(p: f64) -> u32 {
    check_probability(p);
    // p < 1 makes p · 2³² < 2³², so the floor fits a u32 (the cast would saturate anyway).
    (p * 4_294_967_296.0).floor() as u32
}

/// Inverted-dropout scale of the kept elements, `1 / (1 − p)`, computed in f64.
pub fn dropout_scale(p: f64) -> f64 {
    check_probability(p);
    1.0 / (1.0 - p)
}

/// Panics unless `0 ≤ p < 1` (`p = 1` would drop everything and divide by zero).
pub(crate) fn check_probability(p: f64) {
    assert!(
        (0.0..1.0).contains(&p),
        "bias_dropout_add: the drop probability must lie in [0, 1), got {p}"
    );
}

/// Panics when `num_elements` exceeds what a u32 element index can address.
pub(crate) fn check_mask_len(num_elements: usize) {
    assert!(
        num_elements as u64 <= MAX_MASK_ELEMENTS,
        "bias_dropout_add: {num_elements} elements exceed the 2^32 the dropout mask can index"
    );
}

/// Whether element `index` is kept, for drop probability `p` and dropout seed `seed`.
pub fn dropout_keep(seed: impl Into<DropoutSeed>, p: f64, index: u32) -> bool {
    dropout_hash(dropout_key(seed), index) >= dropout_threshold(p)
}

/// The keep-mask of a tensor of shape `dims` (row-major linear indices), exactly as the
/// kernels compute it: `true` = kept (and scaled by `1 / (1 − p)`), `false` = dropped.
pub fn dropout_keep_mask(seed: impl Into<DropoutSeed>, p: f64, dims: &[usize]) -> Vec<bool> {
    let num_elements: usize = dims.iter().product();
    check_mask_len(num_elements);
    let (key, threshold) = (dropout_key(seed), dropout_threshold(p));
    (0..num_elements)
        .map(|i| dropout_hash(key, i as u32) >= threshold)
        .collect()
}

/// [`dropout_keep_mask`] as a Bool tensor of shape `dims` on `device`.
pub fn dropout_keep_mask_tensor<B: Backend, const D: usize>(
    seed: impl Into<DropoutSeed>,
    p: f64,
    dims: [usize; D],
    device: &B::Device,
) -> Tensor<B, D, Bool> {
    let mask = dropout_keep_mask(seed, p, &dims);
    Tensor::from_data(TensorData::new(mask, dims), device)
}
