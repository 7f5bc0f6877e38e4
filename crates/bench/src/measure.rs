//! One benchmark configuration, measured in the current process: the recipe's model on the
//! stack's device, trained with the trainer's own step ([`Stepper`]) on one synthetic batch
//! kept on the device (so the loader and the host→device copy are not timed, as in PyTorch's
//! synthetic-data benchmarks) or on the recipe's real data through the trainer's loader and
//! device prefetcher ([`DataFeed`]).

use super::device_work::{self, DeviceWork};
use super::feed::{DataFeed, Feed};
use super::record::{BenchRecord, Status};
use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::tensor::{Int, Tensor};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_train::memory::read_memory;
use burnacc_train::precision::autocast_float_dtype;
use burnacc_train::recipe::{DeviceSpec, Recipe};
use burnacc_train::stack::route_kernels;
use burnacc_train::stack::{BackendStack, Stack, StackDevice, StackTask};
use burnacc_train::trainer::{
    BatchSource, BlockPlan, ClassifyCheckpointed, Data, FamilyTask, HostData, ModelFamily, Stepper,
    Upload, median, seed_device, with_family,
};
use std::time::Instant;

/// Steps of one configuration: `warmup` single steps (each synchronised and timed; the first
/// one compiles and autotunes), then `windows` windows of `steps` steps, synchronised at the
/// end of each window only, so consecutive steps overlap as in training.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct StepCounts {
    /// Single steps before timing, ≥ 1.
    pub warmup: usize,
    /// Steps per timed window, ≥ 1.
    pub steps: usize,
    /// Timed windows, ≥ 1; the record keeps their median.
    pub windows: usize,
}

/// Measures `recipe` (mode and precision already set in it) on `stack`.
///
/// `record` arrives with the identifying fields filled in; `report` is called with the record
/// after every warm-up step and window, so a run cut short by a time limit still says how far
/// it got.
pub struct Measure<'a> {
    /// The checked recipe (model, batch, optimizer, amp, checkpoint).
    pub recipe: &'a Recipe,
    /// Synthetic or real batches.
    pub data: DataFeed,
    /// Step counts.
    pub counts: StepCounts,
    /// The process's start, from which `init_secs` and `warmup_secs` count.
    pub started: Instant,
    /// The record being filled in.
    pub record: BenchRecord,
    /// Progress callback.
    pub report: &'a dyn Fn(&BenchRecord),
}

impl StackTask for Measure<'_> {
    type Output = Result<BenchRecord>;

    fn run<S: BackendStack>(self, stack: Stack, device: StackDevice<S>) -> Result<BenchRecord> {
        self.measure::<S::Backend>(stack, device)
    }
}

impl Measure<'_> {
    /// Builds the recipe's model on `B` and times its steps.
    fn measure<B: CheckpointBackend>(self, stack: Stack, device: B::Device) -> Result<BenchRecord> {
        // `[kernels]` as in training (`BenchCase::resolve_recipe` switches them off for the
        // eager and fused cases). The routes hold on this thread until the case ends.
        let _routes = route_kernels(stack, &self.recipe.kernels)?;
        seed_device::<B>(&device, self.recipe.train.seed);
        let name = self.recipe.model.name;
        with_family::<B, _>(
            name,
            MeasureFamily {
                measure: self,
                stack,
                device,
            },
        )
    }
}

/// A measurement waiting for its model family.
struct MeasureFamily<'a, B: CheckpointBackend> {
    measure: Measure<'a>,
    stack: Stack,
    device: B::Device,
}

impl<B: CheckpointBackend> FamilyTask<B> for MeasureFamily<'_, B> {
    type Output = Result<BenchRecord>;

    /// The family's network on synthetic or real batches, blocks checkpointed as the recipe
    /// says, timed.
    fn run<F: ModelFamily<B>>(self) -> Result<BenchRecord> {
        let MeasureFamily {
            measure,
            stack,
            device,
        } = self;
        let recipe = measure.recipe;
        type Source<B, F> = <<F as ModelFamily<B>>::Host as HostData<B>>::Source;
        type FamilyFeed<B, F> = Feed<B, <F as ModelFamily<B>>::Host, Source<B, F>>;
        let (feed, classes, channels): (FamilyFeed<B, F>, usize, usize) = match measure.data {
            DataFeed::Synthetic => {
                let (classes, channels) = F::Host::synthetic_shape(recipe);
                let batch = F::Host::synthetic(recipe, classes, channels, &device);
                (Feed::Fixed(batch), classes, channels)
            }
            DataFeed::Real => {
                let data = Data::build(recipe)?;
                let sources = F::Host::sources(&data)
                    .context("the recipe's dataset does not feed its model")?;
                let ahead = recipe.data.device_prefetch;
                let feed = Feed::stream(sources.train, ahead, &device);
                (feed, sources.classes, sources.channels)
            }
        };
        let config = F::config(recipe, classes, channels)?;
        let model = F::build(&config, &device);
        let first = feed.next();
        let mut plan = BlockPlan::new(measure.recipe);
        let autocast = measure
            .recipe
            .amp
            .autocast_dtype()
            .map(autocast_float_dtype);
        plan.plan_once::<B, F::Net, F::Host>(&model, stack, &device, autocast, &first)?;
        measure.time(model, stack, &device, &feed, |model, tape, batch| {
            model.classify_checkpointed(batch, tape, &|i| plan.checkpointed(i))
        })
    }
}

impl Measure<'_> {
    /// Warm-up steps, then timed windows of steps, each on the next batch of `feed`.
    fn time<B, M, H, S>(
        self,
        mut model: M,
        stack: Stack,
        device: &B::Device,
        feed: &Feed<B, H, S>,
        forward: impl Fn(&M, &mut CheckpointTape<B>, H::OnDevice) -> (Tensor<B, 2>, Tensor<B, 1, Int>),
    ) -> Result<BenchRecord>
    where
        B: CheckpointBackend,
        M: AutodiffModule<B>,
        H: Upload<B>,
        S: BatchSource<H> + Send + 'static,
    {
        let Measure {
            recipe,
            counts,
            started,
            mut record,
            report,
            ..
        } = self;
        let lr = recipe.optim.lr;
        let mut stepper = Stepper::<B, M>::new(recipe, device)?;
        let step = |model: &M, tape: &mut CheckpointTape<B>| forward(model, tape, feed.next());
        // Burn draws parameters lazily, on first use: draw them now, outside the timed steps.
        let _ = model.devices();
        B::sync(device)?;
        record.init_secs = Some(started.elapsed().as_secs_f64());
        report(&record);

        for i in 0..counts.warmup {
            let t = Instant::now();
            model = stepper.step(model, lr, step)?.0;
            B::sync(device)?;
            if i == 0 {
                record.first_step_secs = Some(t.elapsed().as_secs_f64());
            }
            record.steps_done += 1;
            report(&record);
        }
        record.warmup_secs = Some(started.elapsed().as_secs_f64());

        let mut wait_fractions = Vec::new();
        // Kernels and reservations per step, from CubeCL's logs, read outside the timed span.
        let count_work = device_work::counting() && stack.device() != DeviceSpec::Cpu;
        let mut work_per_step: Vec<DeviceWork> = Vec::new();
        for _ in 0..counts.windows {
            let before =
                count_work.then(|| (device_work::settled(), device_work::launches_by_kernel()));
            feed.take_wait();
            let t = Instant::now();
            for _ in 0..counts.steps {
                model = stepper.step(model, lr, step)?.0;
            }
            B::sync(device)?;
            let elapsed = t.elapsed().as_secs_f64();
            if let Some(waited) = feed.take_wait() {
                wait_fractions.push(waited.as_secs_f64() / elapsed);
            }
            if let Some((work_before, kernels_before)) = before {
                work_per_step.push(device_work::settled().since(work_before));
                let kernels = device_work::launches_by_kernel();
                record.top_kernels = device_work::most_launched(&kernels_before, &kernels, 12)
                    .into_iter()
                    .map(|(name, n)| (name, n as f64 / counts.steps as f64))
                    .collect();
            }
            record.window_step_secs.push(elapsed / counts.steps as f64);
            record.steps_done += counts.steps;
            report(&record);
        }
        record.step_secs = median(&mut record.window_step_secs.clone());
        record.samples_per_sec = record.step_secs.map(|s| record.batch as f64 / s);
        record.data_wait_fraction = median(&mut wait_fractions);
        record.peak_memory_bytes = read_memory(stack).map(|m| m.peak);
        let per_step = |count: fn(&DeviceWork) -> u64| {
            let mut values: Vec<f64> = work_per_step
                .iter()
                .map(|w| count(w) as f64 / counts.steps as f64)
                .collect();
            median(&mut values)
        };
        record.launches_per_step = per_step(|w| w.launches);
        record.reservations_per_step = per_step(|w| w.reservations);
        record.reserved_bytes_per_step = per_step(|w| w.reserved_bytes);
        record.status = Some(Status::Ok);
        Ok(record)
    }
}
