//! What runs around a step: gradient averaging over data-parallel processes, and the
//! profiler's synchronised phases and op trace.

use super::super::step::{Phase, StepOutput, Stepper};
use crate::profile::Profiler;
use anyhow::Result;
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor};
use burnacc_backend::trace;
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_ddp::Peer;
use std::time::Instant;

/// The step hooks of a run.
pub struct StepHooks<'a, B: CheckpointBackend> {
    /// `--profile`: the window of steps to trace.
    pub profiler: Option<&'a mut Profiler>,
    /// This replica in a data-parallel run: gradients are averaged with the other processes'
    /// between backward and the optimizer step.
    pub peer: Option<&'a Peer<B::InnerBackend>>,
}

impl<B: CheckpointBackend> StepHooks<'_, B> {
    /// Step `step` of `samples` samples with the hooks that apply to it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn step<M: AutodiffModule<B>, F>(
        &mut self,
        stepper: &mut Stepper<B, M>,
        model: M,
        lr: f64,
        forwards: Vec<F>,
        device: &B::Device,
        step: usize,
        samples: usize,
    ) -> Result<(M, StepOutput<B>)>
    where
        F: FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    {
        let peer = self.peer;
        let mut sync = |model: &M, grads: GradientsParams| -> Result<GradientsParams> {
            Ok(match peer {
                Some(peer) => peer.all_reduce_gradients::<B, M>(model, grads)?,
                None => grads,
            })
        };
        match self.profiler.as_deref_mut().filter(|p| p.covers(step)) {
            Some(profiler) => {
                let traced = Traced {
                    profiler,
                    step,
                    samples,
                };
                traced.step(stepper, model, lr, forwards, &mut sync, device)
            }
            None => stepper.step_accumulated(model, lr, forwards, &mut |_| Ok(()), &mut sync),
        }
    }
}

/// A profiled step: its phases synchronised and recorded, the ops `Acc` saw traced.
struct Traced<'a> {
    profiler: &'a mut Profiler,
    step: usize,
    samples: usize,
}

impl Traced<'_> {
    /// Runs the step; writes the trace after the last profiled step.
    fn step<B: CheckpointBackend, M: AutodiffModule<B>, F>(
        self,
        stepper: &mut Stepper<B, M>,
        model: M,
        lr: f64,
        forwards: Vec<F>,
        sync: super::super::step::GradientSync<'_, M>,
        device: &B::Device,
    ) -> Result<(M, StepOutput<B>)>
    where
        F: FnOnce(&M, &mut CheckpointTape<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    {
        let Traced {
            profiler,
            step,
            samples,
        } = self;
        B::sync(device)?;
        let start = Instant::now();
        let mut last = start;
        trace::start_tracing();
        let mark = &mut |phase: Phase| -> Result<()> {
            B::sync(device)?;
            let now = Instant::now();
            profiler.phase(phase.as_str(), last, now, serde_json::Value::Null);
            last = now;
            Ok(())
        };
        let result = stepper.step_accumulated(model, lr, forwards, mark, sync);
        profiler.ops(&trace::stop_tracing());
        let args = serde_json::json!({ "samples": samples });
        profiler.phase(&format!("step {}", step + 1), start, last, args);
        if profiler.is_last(step) {
            profiler.write()?;
            eprintln!(
                "profile: {} (open in https://ui.perfetto.dev or chrome://tracing)",
                profiler.file().display()
            );
        }
        result
    }
}
