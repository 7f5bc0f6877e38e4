//! Tier 1: the `auto` planner against an exhaustive search over every subset of blocks, on
//! chains with known per-block costs.

use burnacc_checkpoint::planner::kept_bytes;
use burnacc_checkpoint::{BlockCost, BudgetTooSmall, plan_checkpoints};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The least recompute of any subset that fits `budget`, and the least memory of any subset.
fn exhaustive(blocks: &[BlockCost], budget: u64) -> (Option<f64>, u64) {
    let n = blocks.len();
    let mut best: Option<f64> = None;
    let mut least = u64::MAX;
    for mask in 0u32..(1 << n) {
        let checkpointed: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
        let kept = kept_bytes(blocks, &checkpointed);
        least = least.min(kept);
        if kept <= budget {
            let cost: f64 = (0..n)
                .filter(|&i| checkpointed[i])
                .map(|i| blocks[i].recompute_secs)
                .sum();
            best = Some(best.map_or(cost, |b: f64| b.min(cost)));
        }
    }
    (best, least)
}

fn random_chain(rng: &mut StdRng, n: usize) -> Vec<BlockCost> {
    (0..n)
        .map(|_| {
            let input = rng.random_range(10..60);
            BlockCost {
                activation_bytes: input + rng.random_range(0..400),
                input_bytes: input,
                // Multiples of 1/8: sums are exact in f64.
                recompute_secs: rng.random_range(1..40) as f64 / 8.0,
            }
        })
        .collect()
}

#[test]
fn the_plan_fits_and_recomputes_as_little_as_the_best_subset() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..40 {
        let n = rng.random_range(1..=10);
        let blocks = random_chain(&mut rng, n);
        let everything = kept_bytes(&blocks, &vec![false; n]);
        // Budgets below 2048 bytes: the knapsack works in whole bytes, so it is exact here.
        for budget in (0..=everything + 10).step_by(7) {
            let (best, least) = exhaustive(&blocks, budget);
            match (plan_checkpoints(&blocks, budget), best) {
                (Ok(plan), Some(best)) => {
                    assert!(plan.kept_bytes <= budget, "{plan:?} over {budget}");
                    assert_eq!(plan.kept_bytes, kept_bytes(&blocks, &plan.checkpointed));
                    assert_eq!(plan.recompute_secs, best, "budget {budget}, {blocks:?}");
                }
                (Err(BudgetTooSmall { needed, .. }), None) => assert_eq!(needed, least),
                (got, best) => panic!("budget {budget}: planner {got:?}, exhaustive {best:?}"),
            }
        }
    }
}

#[test]
fn the_plan_is_no_worse_than_a_uniform_choice() {
    // A ResNet-50-like chain: 16 blocks whose activations shrink by stage while inputs halve.
    let stages = [(3, 400u64, 100u64), (4, 200, 50), (6, 100, 25), (3, 50, 12)];
    let blocks: Vec<BlockCost> = stages
        .iter()
        .flat_map(|&(count, act, input)| {
            (0..count).map(move |_| BlockCost {
                activation_bytes: act * 1_000_000,
                input_bytes: input * 1_000_000,
                recompute_secs: 0.01,
            })
        })
        .collect();
    let n = blocks.len();
    let none = kept_bytes(&blocks, &vec![false; n]);
    let all = kept_bytes(&blocks, &vec![true; n]);
    assert!(all < none / 2);
    let budget = (none + all) / 2;
    let plan = plan_checkpoints(&blocks, budget).unwrap();
    assert!(plan.kept_bytes <= budget);
    // Every block checkpointed also fits, at 16 recomputes; the plan needs fewer.
    let checkpointed = plan.checkpointed.iter().filter(|c| **c).count();
    assert!(checkpointed < n, "{plan:?}");
    assert!(plan.recompute_secs < 0.01 * n as f64);
    // Memory-heavy blocks are checkpointed first: they save the most per recompute.
    assert!(plan.checkpointed[..3].iter().all(|c| *c), "{plan:?}");
    // A budget the whole chain fits in needs no checkpointing.
    let free = plan_checkpoints(&blocks, none).unwrap();
    assert!(free.checkpointed.iter().all(|c| !c));
    assert_eq!(free.recompute_secs, 0.0);
}
