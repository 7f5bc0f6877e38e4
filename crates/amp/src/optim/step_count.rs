//! A parameter's step counter as the optimizers keep it: an f32 `[1]` tensor of its own, or
//! its entry in the f32 `[n]` counters of the multi-tensor group it last stepped with.
//!
//! A multi-tensor step reads the counters of its `n` parameters as one `[n]` tensor and
//! advances them as one. Kept as `n` tensors of `[1]`, every step would gather them into one
//! (`cat`: one slice-assign kernel per parameter on CubeCL devices) and slice them apart again
//! (one slice kernel per parameter): two launches per parameter, more than the update itself.
//! A group that steps with the same parameters in the same order as last time reads its `[n]`
//! counters as they are.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use std::sync::Arc;

/// One parameter's step counter (steps taken, skipped steps not counted).
#[derive(Clone, Debug)]
pub(crate) enum StepCount<B: Backend> {
    /// An f32 `[1]` counter of its own.
    Own(Tensor<B, 1>),
    /// Entry `index` of a group's f32 `[n]` counters.
    InGroup {
        /// The group's counters, shared by its parameters.
        counts: Arc<Tensor<B, 1>>,
        /// This parameter's entry.
        index: usize,
    },
}

impl<B: Backend> StepCount<B> {
    /// The counter as an f32 `[1]` tensor (a slice of its group's counters, then).
    pub(crate) fn tensor(&self) -> Tensor<B, 1> {
        match self {
            StepCount::Own(step) => step.clone(),
            StepCount::InGroup { counts, index } => {
                counts.as_ref().clone().slice([*index..*index + 1])
            }
        }
    }
}

/// The counters of a group of parameters as one f32 `[n]` tensor, in their order: the `[n]`
/// counters of the group they last stepped with, unchanged, when they are exactly that group
/// in the same order; else gathered from each.
pub(crate) fn group_counts<B: Backend>(counts: &[StepCount<B>]) -> Tensor<B, 1> {
    if let Some(StepCount::InGroup { counts: group, .. }) = counts.first() {
        let same_group = group.dims()[0] == counts.len()
            && counts.iter().enumerate().all(|(i, count)| {
                matches!(count, StepCount::InGroup { counts: g, index } if Arc::ptr_eq(g, group) && *index == i)
            });
        if same_group {
            return group.as_ref().clone();
        }
    }
    Tensor::cat(counts.iter().map(StepCount::tensor).collect(), 0)
}

/// The entries of a group's f32 `[n]` counters, in order, as its parameters keep them.
pub(crate) fn split_counts<B: Backend>(counts: Tensor<B, 1>) -> Vec<StepCount<B>> {
    let n = counts.dims()[0];
    let counts = Arc::new(counts);
    (0..n)
        .map(|index| StepCount::InGroup {
            counts: counts.clone(),
            index,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{StepCount, group_counts, split_counts};
    use burn::backend::Flex;
    use burn::tensor::{Tensor, TensorData};

    fn tensor(values: &[f32]) -> Tensor<Flex, 1> {
        Tensor::from_data(
            TensorData::new(values.to_vec(), [values.len()]),
            &Default::default(),
        )
    }

    fn values(t: Tensor<Flex, 1>) -> Vec<f32> {
        t.into_data().to_vec().unwrap()
    }

    #[test]
    fn a_group_stepping_again_reads_its_own_counters() {
        let group = tensor(&[3.0, 5.0, 7.0]);
        let counts = split_counts(group.clone());
        assert_eq!(values(counts[1].tensor()), [5.0]);
        let again = group_counts(&counts);
        assert_eq!(values(again.clone()), [3.0, 5.0, 7.0]);
        // The same tensor, not a gathered copy: both read one buffer.
        let address = |t: Tensor<Flex, 1>| {
            let t = t.into_primitive().tensor();
            t.as_slice::<f32>().expect("contiguous f32").as_ptr()
        };
        assert_eq!(address(again), address(group));
    }

    #[test]
    fn another_order_or_group_gathers_each_counter() {
        let first = split_counts(tensor(&[1.0, 2.0, 3.0]));
        let second = split_counts(tensor(&[10.0, 20.0]));
        // Reordered.
        let reordered = [first[2].clone(), first[0].clone(), first[1].clone()];
        assert_eq!(values(group_counts(&reordered)), [3.0, 1.0, 2.0]);
        // A subset of the group.
        assert_eq!(values(group_counts(&first[..2])), [1.0, 2.0]);
        // Two groups and a counter of its own.
        let mixed = [
            second[1].clone(),
            StepCount::Own(tensor(&[0.0])),
            first[0].clone(),
        ];
        assert_eq!(values(group_counts(&mixed)), [20.0, 0.0, 1.0]);
    }
}
