//! [`Shard`]: one rank's share of each epoch in data-parallel training.

/// Rank `rank` of `world` takes positions `rank, rank + world, rank + 2·world, …` of each
/// epoch's order (PyTorch's `DistributedSampler` dealing, applied to the loader's own shuffle,
/// which every rank computes alike from the shared seed). The order is first padded by
/// repeating its start up to a multiple of `world`, so every rank serves as many samples and
/// takes as many steps. With per-rank batches of `b`, step `t` of the ranks together covers
/// positions `[t·world·b, (t+1)·world·b)`: the batch of one loader with batches of `world·b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This rank, `0..world`.
    pub rank: usize,
    /// Ranks sharing the data.
    pub world: usize,
}

impl Shard {
    /// Rank `rank` of `world`; panics unless `rank < world`.
    pub fn new(rank: usize, world: usize) -> Self {
        assert!(rank < world, "shard: rank {rank} of {world}");
        Self { rank, world }
    }

    /// Samples each rank serves of `samples`: `⌈samples / world⌉`.
    pub fn len(&self, samples: usize) -> usize {
        samples.div_ceil(self.world)
    }

    /// This rank's positions of `order`, in order.
    pub fn take(&self, order: &[usize]) -> Vec<usize> {
        let padded = order
            .iter()
            .copied()
            .cycle()
            .take(self.len(order.len()) * self.world);
        padded.skip(self.rank).step_by(self.world).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn ranks_deal_the_order_round_robin_padded_to_equal_shares() {
        let order = [5, 3, 9, 0, 7];
        assert_eq!(Shard::new(0, 2).take(&order), vec![5, 9, 7]);
        assert_eq!(Shard::new(1, 2).take(&order), vec![3, 0, 5]);
        assert_eq!(Shard::new(0, 1).take(&order), order.to_vec());
        assert_eq!(Shard::new(2, 3).len(5), 2);
        assert!(Shard::new(1, 2).take(&[]).is_empty());
    }
}
