//! `auto_checkpoint`'s choice: which blocks to checkpoint so that the activations kept for
//! backward fit a memory budget, recomputing as little forward work as possible.
//!
//! Memory model, per block `i` of a chain (ResNet blocks, encoder layers):
//! - not checkpointed, autodiff keeps the block's activations, `activation_bytes[i]`;
//! - checkpointed, the tape keeps only the block's input, `input_bytes[i]`, and backward
//!   recomputes the block (`recompute_secs[i]`, its forward time), which briefly holds its
//!   activations again — one block at a time, so the largest recomputed block adds to the peak.
//!
//! ```text
//! kept(S) = Σ_{i∉S} act_i + Σ_{i∈S} in_i + max_{i∈S} act_i        (S: checkpointed blocks)
//! minimise Σ_{i∈S} recompute_i  subject to  kept(S) ≤ budget
//! ```
//!
//! For each candidate largest recomputed block `r`, the rest is a 0/1 knapsack over the blocks
//! to *keep* (value: the recompute they avoid; weight: `act_i − in_i`), solved exactly by dynamic
//! programming over the budget in [`UNITS`] steps, with weights rounded up, so a plan that is
//! returned always fits.

/// Budget resolution of the knapsack.
pub const UNITS: u64 = 2048;

/// What a block costs to keep or to recompute.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockCost {
    /// Bytes autodiff keeps for the block's backward when it is not checkpointed.
    pub activation_bytes: u64,
    /// Bytes of the block's input, kept when it is checkpointed.
    pub input_bytes: u64,
    /// Seconds to run the block's forward pass again.
    pub recompute_secs: f64,
}

/// The blocks to checkpoint and what that costs.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointPlan {
    /// `checkpointed[i]`: block `i` is checkpointed.
    pub checkpointed: Vec<bool>,
    /// Activation bytes kept at the peak of backward, by the memory model.
    pub kept_bytes: u64,
    /// Forward seconds recomputed per step.
    pub recompute_secs: f64,
}

/// The budget cannot be met even with every block checkpointed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "checkpoint budget {budget} bytes is below the {needed} bytes kept with every block \
     checkpointed; raise the budget or lower the batch size"
)]
pub struct BudgetTooSmall {
    /// The budget asked for.
    pub budget: u64,
    /// The least memory any plan keeps.
    pub needed: u64,
}

/// The memory model's kept bytes for `checkpointed`.
pub fn kept_bytes(blocks: &[BlockCost], checkpointed: &[bool]) -> u64 {
    let stored: u64 = blocks
        .iter()
        .zip(checkpointed)
        .map(|(b, &c)| if c { b.input_bytes } else { b.activation_bytes })
        .sum();
    let largest_recompute = blocks
        .iter()
        .zip(checkpointed)
        .filter(|(_, c)| **c)
        .map(|(b, _)| b.activation_bytes)
        .max()
        .unwrap_or(0);
    stored + largest_recompute
}

fn plan_of(blocks: &[BlockCost], checkpointed: Vec<bool>) -> CheckpointPlan {
    CheckpointPlan {
        kept_bytes: kept_bytes(blocks, &checkpointed),
        recompute_secs: blocks
            .iter()
            .zip(&checkpointed)
            .filter(|(_, c)| **c)
            .map(|(b, _)| b.recompute_secs)
            .sum::<f64>()
            // An empty float sum is −0.0.
            + 0.0,
        checkpointed,
    }
}

/// The least kept bytes of any plan in which `r` is checkpointed and has the largest
/// activations among the checkpointed blocks: `r` and every block with no larger activations
/// keep the smaller of their input and their activations, the others their activations.
fn least_kept_with(blocks: &[BlockCost], r: usize) -> u64 {
    let cap = blocks[r].activation_bytes;
    let stored: u64 = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match i {
            _ if i == r => b.input_bytes,
            _ if b.activation_bytes <= cap => b.input_bytes.min(b.activation_bytes),
            _ => b.activation_bytes,
        })
        .sum();
    stored + cap
}

/// The plan that fits `budget` bytes with the least recompute.
pub fn plan_checkpoints(
    blocks: &[BlockCost],
    budget: u64,
) -> Result<CheckpointPlan, BudgetTooSmall> {
    let n = blocks.len();
    let none = plan_of(blocks, vec![false; n]);
    if none.kept_bytes <= budget {
        return Ok(none);
    }
    let mut best: Option<CheckpointPlan> = None;
    // r: the block with the largest activations among the checkpointed ones.
    for r in 0..n {
        let Some(room) = budget.checked_sub(least_kept_with(blocks, r)) else {
            continue;
        };
        let may_checkpoint =
            |i: usize| i == r || blocks[i].activation_bytes <= blocks[r].activation_bytes;
        let keep = knapsack_keep(blocks, r, &may_checkpoint, room);
        let checkpointed = (0..n).map(|i| may_checkpoint(i) && !keep[i]).collect();
        let plan = plan_of(blocks, checkpointed);
        debug_assert!(plan.kept_bytes <= budget, "the knapsack rounds weights up");
        if best
            .as_ref()
            .is_none_or(|b| plan.recompute_secs < b.recompute_secs)
        {
            best = Some(plan);
        }
    }
    best.ok_or_else(|| BudgetTooSmall {
        budget,
        needed: (0..n)
            .map(|r| least_kept_with(blocks, r))
            .fold(none.kept_bytes, u64::min),
    })
}

/// Which candidates (other than `r`, which is checkpointed) to keep un-checkpointed within
/// `room` extra bytes, maximising the recompute avoided.
fn knapsack_keep(
    blocks: &[BlockCost],
    r: usize,
    may_checkpoint: &dyn Fn(usize) -> bool,
    room: u64,
) -> Vec<bool> {
    let n = blocks.len();
    let mut keep = vec![false; n];
    let items: Vec<usize> = (0..n).filter(|&i| i != r && may_checkpoint(i)).collect();
    // Keeping a block whose activations are no larger than its input costs nothing.
    let mut paid = Vec::new();
    for &i in &items {
        if blocks[i].activation_bytes <= blocks[i].input_bytes {
            keep[i] = true;
        } else {
            paid.push(i);
        }
    }
    let unit = room.div_ceil(UNITS).max(1);
    let capacity = (room / unit) as usize;
    let weight =
        |i: usize| (blocks[i].activation_bytes - blocks[i].input_bytes).div_ceil(unit) as usize;
    // value[w]: the most recompute avoided within weight w; choice[k][w]: item k taken there.
    let mut value = vec![0.0f64; capacity + 1];
    let mut choice = vec![vec![false; capacity + 1]; paid.len()];
    for (k, &i) in paid.iter().enumerate() {
        let w = weight(i);
        for c in (w..=capacity).rev() {
            let with = value[c - w] + blocks[i].recompute_secs;
            if with > value[c] {
                value[c] = with;
                choice[k][c] = true;
            }
        }
    }
    let mut c = capacity;
    for (k, &i) in paid.iter().enumerate().rev() {
        if choice[k][c] {
            keep[i] = true;
            c -= weight(i);
        }
    }
    keep
}
