//! `float_random` for Bernoulli draws in f32 (the keep-masks of `nn::Dropout` and of drop
//! path): one multi-threaded pass of a counter-based hash, seeded by two words drawn from
//! Flex's generator, instead of Flex's sequential per-element sampling from its ChaCha
//! generator (a few % of a BERT-base step at 128 tokens: one draw per attention probability).
//!
//! Deterministic: the seed words come from Flex's seeded generator in the same order as any
//! other random op, so `Backend::seed` reproduces every mask. The values differ from Flex's
//! for the same seed (another generator); `eager` and `acc` therefore draw different dropout
//! masks, as `acc`'s fused bias + dropout + add already does. The hash is burnacc's dropout
//! hash (MurmurHash3 of the seed words and the element index, `burnacc_kernels::
//! bias_dropout_add::mask`): element `i` is 1 when its 32-bit hash is below `p · 2³²`.

use crate::counters::BERNOULLI_F32;
use crate::kernels::rows::TASK_ELEMENTS;
use burn::backend::Flex;
use burn::backend::flex::{FlexDevice, FlexTensor, Layout};
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{Bytes, DType, Distribution, FloatDType, Shape};
use burnacc_kernels::bias_dropout_add::mask::{MAX_MASK_ELEMENTS, dropout_hash, dropout_key};
use burnacc_kernels::bias_dropout_add::{DropoutSeed, dropout_seed};
use rayon::prelude::*;

/// A random tensor of `shape` from `distribution`.
pub fn float_random(
    shape: Shape,
    distribution: Distribution,
    device: &FlexDevice,
    dtype: FloatDType,
) -> FlexTensor {
    match (distribution, dtype) {
        (Distribution::Bernoulli(p), FloatDType::F32)
            if (shape.num_elements() as u64) <= MAX_MASK_ELEMENTS =>
        {
            BERNOULLI_F32.bump();
            bernoulli_f32(shape, p, device)
        }
        _ => Flex::float_random(shape, distribution, device, dtype),
    }
}

/// 1 with probability `p`, else 0, per element.
fn bernoulli_f32(shape: Shape, p: f64, device: &FlexDevice) -> FlexTensor {
    // The seed is drawn as the fused dropout draws its own: two words from Flex's generator.
    let key = dropout_key(DropoutSeed::from_tensor(dropout_seed::<Flex>(device)));
    // Hashes below `p · 2³²` give 1 (all of them at p = 1, none at p = 0).
    let threshold = (p.clamp(0.0, 1.0) * 4_294_967_296.0).floor() as u64;
    let mut values = vec![0f32; shape.num_elements()];
    values
        .par_chunks_mut(TASK_ELEMENTS)
        .enumerate()
        .for_each(|(chunk, values)| {
            let start = chunk * TASK_ELEMENTS;
            for (j, v) in values.iter_mut().enumerate() {
                let hash = dropout_hash(key, (start + j) as u32);
                *v = if (hash as u64) < threshold { 1.0 } else { 0.0 };
            }
        });
    FlexTensor::new(
        Bytes::from_elems(values),
        Layout::contiguous(shape),
        DType::F32,
    )
}
