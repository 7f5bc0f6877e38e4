//! `[checkpoint] mode = "auto"`: measure what each block keeps for backward and what it costs
//! to run, then let the planner pick the blocks to checkpoint under `checkpoint.budget`.
//!
//! The measurement is one forward pass under autodiff (after one that warms up kernels), with
//! the device synchronised around each block: the memory in use grows by what autodiff keeps
//! for the block's backward plus its output, and the wall time is the block's forward time,
//! which is what recomputing it costs.

use crate::memory::read_memory;
use crate::stack::Stack;
use anyhow::Result;
use burn::tensor::FloatDType;
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burnacc_backend::autocast::autocast;
use burnacc_checkpoint::{BlockCost, CheckpointPlan, plan_checkpoints};
use std::time::Instant;

/// Told when each block of a forward pass starts and ends.
pub trait BlockProbe {
    /// Block starts; its input holds `input_bytes`.
    fn before_block(&mut self, input_bytes: u64);
    /// Block ended.
    fn after_block(&mut self);
}

/// Records a [`BlockCost`] per block from the device's memory in use and the wall clock.
struct MeasuringProbe<'a, B: Backend> {
    device: &'a B::Device,
    stack: Stack,
    costs: Vec<BlockCost>,
    open: Option<(u64, u64, Instant)>,
}

impl<B: Backend> MeasuringProbe<'_, B> {
    fn in_use(&self) -> u64 {
        B::sync(self.device).expect("the device failed while measuring blocks");
        read_memory(self.stack).map_or(0, |m| m.in_use)
    }
}

impl<B: Backend> BlockProbe for MeasuringProbe<'_, B> {
    fn before_block(&mut self, input_bytes: u64) {
        let in_use = self.in_use();
        self.open = Some((input_bytes, in_use, Instant::now()));
    }

    fn after_block(&mut self) {
        let (input_bytes, before, started) =
            self.open.take().expect("after_block follows before_block");
        let in_use = self.in_use();
        self.costs.push(BlockCost {
            activation_bytes: in_use.saturating_sub(before),
            input_bytes,
            recompute_secs: started.elapsed().as_secs_f64(),
        });
    }
}

/// The cost of each block of `model`, measured on the second of two forward passes
/// (`forward` runs the model with a probe and returns its output), under autocast when
/// `autocast_dtype` is set.
///
/// Each pass ends with a backward pass of its output whose gradients are dropped: a forward
/// pass left unconsumed keeps its part of the autodiff graph attached to the parameters, and
/// the checkpoint tape's later backward passes then computed other gradients (seen on Burn
/// 0.21 with some blocks checkpointed).
pub fn measure_blocks<B: AutodiffBackend, M>(
    model: &M,
    stack: Stack,
    device: &B::Device,
    autocast_dtype: Option<FloatDType>,
    forward: impl Fn(&M, &mut dyn BlockProbe) -> Tensor<B, 2>,
) -> Vec<BlockCost> {
    let mut costs = Vec::new();
    for _pass in 0..2 {
        let _guard = autocast_dtype.map(|d| autocast(d).expect("amp dtype is f16 or bf16"));
        let mut probe = MeasuringProbe::<B> {
            device,
            stack,
            costs: Vec::new(),
            open: None,
        };
        let output = forward(model, &mut probe);
        costs = probe.costs;
        drop(output.sum().backward());
    }
    costs
}

/// What `auto` chose, for the log and the run summary.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AutoCheckpointSummary {
    /// The budget, bytes.
    pub budget: u64,
    /// Activation bytes kept without checkpointing, as measured.
    pub kept_without: u64,
    /// Activation bytes kept with the plan, by the planner's memory model.
    pub kept_with: u64,
    /// The least activation bytes any plan keeps: the smallest budget `auto` accepts.
    pub least_kept: u64,
    /// Indices of the checkpointed blocks.
    pub checkpointed: Vec<usize>,
    /// Blocks in the model.
    pub blocks: usize,
    /// Forward seconds recomputed per step.
    pub recompute_secs: f64,
    /// Forward seconds of all blocks, for scale.
    pub forward_secs: f64,
}

/// The plan for `costs` under `budget`, with its summary; the error names the recipe key.
pub fn plan_auto(
    costs: &[BlockCost],
    budget: u64,
) -> Result<(CheckpointPlan, AutoCheckpointSummary)> {
    let plan =
        plan_checkpoints(costs, budget).map_err(|e| anyhow::anyhow!("checkpoint.budget: {e}"))?;
    let summary = AutoCheckpointSummary {
        budget,
        kept_without: burnacc_checkpoint::planner::kept_bytes(costs, &vec![false; costs.len()]),
        kept_with: plan.kept_bytes,
        least_kept: match plan_checkpoints(costs, 0) {
            Ok(plan) => plan.kept_bytes,
            Err(too_small) => too_small.needed,
        },
        checkpointed: (0..costs.len()).filter(|&i| plan.checkpointed[i]).collect(),
        blocks: costs.len(),
        recompute_secs: plan.recompute_secs,
        forward_secs: costs.iter().map(|c| c.recompute_secs).sum(),
    };
    Ok((plan, summary))
}

impl std::fmt::Display for AutoCheckpointSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        write!(
            f,
            "{} of {} blocks checkpointed {:?}: {:.1} MiB of activations kept (budget {:.1} MiB, \
             {:.1} MiB without checkpointing), {:.1} ms of {:.1} ms forward recomputed per step",
            self.checkpointed.len(),
            self.blocks,
            self.checkpointed,
            mib(self.kept_with),
            mib(self.budget),
            mib(self.kept_without),
            1e3 * self.recompute_secs,
            1e3 * self.forward_secs
        )
    }
}
