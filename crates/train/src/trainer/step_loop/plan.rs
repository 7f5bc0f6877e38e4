//! Which blocks each step checkpoints (`[checkpoint] mode`): none, all, or the `auto`
//! planner's choice, measured on the first batch.

use super::super::auto_checkpoint::{AutoCheckpointSummary, measure_blocks, plan_auto};
use super::super::batch::Upload;
use super::super::classify::ClassifyCheckpointed;
use crate::recipe::{CheckpointMode, Recipe};
use crate::stack::Stack;
use anyhow::Result;
use burn::tensor::{FloatDType, Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};

/// Logits `[samples, classes]` and labels `[samples]`.
type Classified<B> = (Tensor<B, 2>, Tensor<B, 1, Int>);

/// The blocks a run checkpoints.
pub struct BlockPlan {
    mode: CheckpointMode,
    budget: Option<u64>,
    /// `auto`: the choice, once planned.
    auto: Option<Vec<bool>>,
}

impl BlockPlan {
    /// The recipe's `[checkpoint]`; `auto` is planned on the first step.
    pub fn new(recipe: &Recipe) -> Self {
        Self {
            mode: recipe.checkpoint.mode,
            budget: recipe.checkpoint.budget_bytes(),
            auto: None,
        }
    }

    /// `auto`, not yet planned: measures `model`'s blocks on `first` and plans under the
    /// budget (`autocast`: the dtype the forward pass runs in). The summary, when it planned.
    pub fn plan_once<B, M, H>(
        &mut self,
        model: &M,
        stack: Stack,
        device: &B::Device,
        autocast: Option<FloatDType>,
        first: &H::OnDevice,
    ) -> Result<Option<AutoCheckpointSummary>>
    where
        B: CheckpointBackend,
        M: ClassifyCheckpointed<B, H>,
        H: Upload<B>,
    {
        if self.mode != CheckpointMode::Auto || self.auto.is_some() {
            return Ok(None);
        }
        let budget = self.budget.expect("auto has a budget");
        let costs = measure_blocks::<B, M>(model, stack, device, autocast, |m, probe| {
            m.classify_probed(first.clone(), probe)
        });
        let (plan, summary) = plan_auto(&costs, budget)?;
        eprintln!("checkpoint: auto: {summary}");
        self.auto = Some(plan.checkpointed);
        Ok(Some(summary))
    }

    /// Whether the forward pass checkpoints block `block` (for `auto`, once planned).
    pub fn checkpointed(&self, block: usize) -> bool {
        match self.mode {
            CheckpointMode::None => false,
            CheckpointMode::Blocks => true,
            CheckpointMode::Auto => self.auto.as_ref().expect("planned on the first step")[block],
        }
    }

    /// The forward passes of a step's micro-batches. Every mode runs the blocks through the
    /// step's tape, which seeds each block's random draws by its position: dropout and
    /// stochastic depth draw the same values whichever blocks are checkpointed.
    pub fn forwards<'a, B, M, H>(
        &'a self,
        micro: Vec<H::OnDevice>,
    ) -> Vec<impl FnOnce(&M, &mut CheckpointTape<B>) -> Classified<B> + 'a>
    where
        B: CheckpointBackend,
        M: ClassifyCheckpointed<B, H>,
        H: Upload<B>,
    {
        micro
            .into_iter()
            .map(move |batch| {
                move |model: &M, tape: &mut CheckpointTape<B>| {
                    model.classify_checkpointed(batch, tape, &|i| self.checkpointed(i))
                }
            })
            .collect()
    }
}
