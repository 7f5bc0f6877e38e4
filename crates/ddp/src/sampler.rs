//! [`DistributedSampler`]: which samples each rank trains on (PyTorch's
//! `torch.utils.data.DistributedSampler`).

/// Splits `len` samples over `world` ranks: every epoch the indices are permuted with a seed
/// of `(seed, epoch)` (the same on every rank), padded by repeating the first ones up to a
/// multiple of `world` so that every rank gets the same number (PyTorch's default, which keeps
/// the peers' step counts equal), and dealt out round-robin: rank `r` takes positions
/// `r, r + world, r + 2·world, …`.
#[derive(Clone, Debug)]
pub struct DistributedSampler {
    len: usize,
    world: usize,
    rank: usize,
    seed: u64,
    shuffle: bool,
}

impl DistributedSampler {
    /// The share of `rank` (`< world`) of `len` samples; `shuffle` permutes each epoch.
    pub fn new(len: usize, world: usize, rank: usize, seed: u64, shuffle: bool) -> Self {
        assert!(
            world > 0 && rank < world,
            "sampler: rank {rank} of world {world}"
        );
        Self {
            len,
            world,
            rank,
            seed,
            shuffle,
        }
    }

    /// Samples each rank gets per epoch, `⌈len / world⌉`.
    pub fn len_per_rank(&self) -> usize {
        self.len.div_ceil(self.world)
    }

    /// This rank's sample indices for `epoch`, `len_per_rank()` of them.
    pub fn indices(&self, epoch: u64) -> Vec<usize> {
        if self.len == 0 {
            return Vec::new();
        }
        let mut order: Vec<usize> = (0..self.len).collect();
        if self.shuffle {
            shuffle(&mut order, mix(self.seed, epoch));
        }
        let total = self.len_per_rank() * self.world;
        let padded = order.iter().copied().cycle().take(total);
        padded.skip(self.rank).step_by(self.world).collect()
    }
}

/// SplitMix64 of `(seed, epoch)`: unrelated streams for neighbouring epochs.
fn mix(seed: u64, epoch: u64) -> u64 {
    let mut z = seed ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fisher–Yates with a SplitMix64 stream from `state`: the same permutation on every rank.
fn shuffle(values: &mut [usize], mut state: u64) {
    for i in (1..values.len()).rev() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let j = (mix(state, 0) % (i as u64 + 1)) as usize;
        values.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_cover_every_sample_once_per_epoch_and_reshuffle() {
        let (len, world) = (10, 3);
        let shares: Vec<Vec<usize>> = (0..world)
            .map(|r| DistributedSampler::new(len, world, r, 7, true).indices(0))
            .collect();
        // Even shares: 4 each, 12 in all, so 2 samples repeat.
        assert!(shares.iter().all(|s| s.len() == 4));
        let mut all: Vec<usize> = shares.concat();
        all.sort();
        all.dedup();
        assert_eq!(all, (0..len).collect::<Vec<_>>());
        // Epochs reshuffle; the same epoch is the same on every call.
        let sampler = DistributedSampler::new(len, world, 1, 7, true);
        assert_eq!(sampler.indices(3), sampler.indices(3));
        assert_ne!(sampler.indices(0), sampler.indices(1));
        // Without shuffling, round-robin in order.
        let plain = DistributedSampler::new(len, world, 1, 7, false);
        assert_eq!(plain.indices(5), vec![1, 4, 7, 0]);
    }
}
