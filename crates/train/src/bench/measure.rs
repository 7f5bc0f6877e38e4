//! One benchmark configuration, measured in the current process: the recipe's model on the
//! stack's device, trained with the trainer's own step ([`Stepper`]) on one synthetic batch
//! kept on the device (so the loader and the host→device copy are not timed, as in PyTorch's
//! synthetic-data benchmarks) or on the recipe's real data through the trainer's loader and
//! device prefetcher ([`DataFeed`]).

use super::feed::{DataFeed, Feed};
use super::record::{BenchRecord, Status};
use crate::memory::read_memory;
use crate::recipe::{CheckpointMode, DatasetKind, Recipe};
use crate::stack::route_kernels;
use crate::stack::{BackendStack, Stack, StackDevice, StackTask};
use crate::trainer::median;
use crate::trainer::{
    BatchSource, BlockFilter, BlockProbe, ImageBatch, Stepper, Upload, bert_config,
    bert_forward_probed, bert_forward_selected, build_image_data, build_text_data, forward_probed,
    forward_selected, measure_blocks, model_config, plan_auto, seed_device, swin_forward_probed,
    swin_forward_selected, swin_model_config,
};
use anyhow::Result;
use burn::module::AutodiffModule;
use burn::tensor::{Distribution, Int, Tensor, TensorData};
use burnacc_checkpoint::{CheckpointBackend, CheckpointTape};
use burnacc_datasets::text::{TextBatch, TextLoader};
use burnacc_datasets::{HostBatch, Loader};
use burnacc_models::BertForSequenceClassification;
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

/// Text models classify into 2 labels (sentiment); image models into `model.num_classes`,
/// else the mock ImageNet's class count.
fn image_classes(recipe: &Recipe) -> usize {
    recipe.model.num_classes.unwrap_or(recipe.data.mock.classes)
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
        let batch = self.recipe.train.batch_size;
        let recipe = self.recipe;
        let ahead = recipe.data.device_prefetch;
        if recipe.model.name.is_text() {
            let config = bert_config(recipe);
            let (feed, classes) = match self.data {
                DataFeed::Synthetic => {
                    let text = synthetic_text(batch, recipe.data.max_length, config.vocab_size, 2);
                    (Feed::Fixed(Upload::<B>::upload(text, &device)), 2)
                }
                DataFeed::Real => {
                    let data = build_text_data(recipe)?;
                    (Feed::stream(data.train, ahead, &device), data.num_classes)
                }
            };
            let model = BertForSequenceClassification::<B>::new(&config, classes, &device);
            let first = feed.next();
            let plan = self.plan::<B, _>(&model, stack, &device, |m, probe| {
                bert_forward_probed(m, &first.input, probe)
            })?;
            self.time::<B, _, TextBatch, TextLoader>(
                model,
                stack,
                &device,
                &feed,
                |model, tape, batch| {
                    let logits = match &plan {
                        None => model.forward(&batch.input),
                        Some(plan) => bert_forward_selected(model, &batch.input, tape, &**plan),
                    };
                    (logits, batch.labels)
                },
            )
        } else {
            let (feed, classes, channels) = match self.data {
                DataFeed::Synthetic => {
                    let channels = match recipe.data.dataset {
                        DatasetKind::FashionMnist => 1,
                        _ => 3,
                    };
                    let classes = image_classes(recipe);
                    let size = recipe.data.image_size;
                    let images = Tensor::<B, 4>::random(
                        [batch, channels, size, size],
                        Distribution::Normal(0.0, 1.0),
                        &device,
                    );
                    let labels = synthetic_labels::<B>(batch, classes, &device);
                    (
                        Feed::Fixed(ImageBatch { images, labels }),
                        classes,
                        channels,
                    )
                }
                DataFeed::Real => {
                    let data = build_image_data(recipe)?;
                    let feed = Feed::stream(data.train, ahead, &device);
                    (feed, data.num_classes, data.channels)
                }
            };
            if recipe.model.name.is_swin() {
                let config = swin_model_config(recipe, classes, channels)?;
                let model = config.init::<B>(&device);
                self.time_images(
                    model,
                    &feed,
                    stack,
                    &device,
                    swin_forward_probed,
                    swin_forward_selected,
                )
            } else {
                let model = model_config(recipe, classes, channels).init::<B>(&device);
                self.time_images(
                    model,
                    &feed,
                    stack,
                    &device,
                    forward_probed,
                    forward_selected,
                )
            }
        }
    }
}

/// Which blocks a forward pass checkpoints, by index.
type Selection = Box<dyn Fn(usize) -> bool>;

impl Measure<'_> {
    /// Which blocks to checkpoint (`None`: none): all for `blocks`, the planner's choice under
    /// `checkpoint.budget` for `auto`, measured with `probed`.
    fn plan<B: CheckpointBackend, M>(
        &self,
        model: &M,
        stack: Stack,
        device: &B::Device,
        probed: impl Fn(&M, &mut dyn BlockProbe) -> Tensor<B, 2>,
    ) -> Result<Option<Selection>> {
        Ok(match self.recipe.checkpoint.mode {
            CheckpointMode::None => None,
            CheckpointMode::Blocks => Some(Box::new(|_| true)),
            CheckpointMode::Auto => {
                let budget = self
                    .recipe
                    .checkpoint
                    .budget_bytes()
                    .expect("auto has a budget");
                let autocast = self
                    .recipe
                    .amp
                    .autocast_dtype()
                    .map(crate::precision::autocast_float_dtype);
                let costs = measure_blocks::<B, M>(model, stack, device, autocast, probed);
                let (plan, summary) = plan_auto(&costs, budget)?;
                eprintln!("checkpoint: auto: {summary}");
                Some(Box::new(move |i| plan.checkpointed[i]))
            }
        })
    }

    /// Times `model` on the image batches of `feed`; `probed` and `selected` are the model's
    /// forward passes with a block probe and with checkpointed blocks.
    fn time_images<B, M>(
        self,
        model: M,
        feed: &Feed<B, HostBatch, Loader>,
        stack: Stack,
        device: &B::Device,
        probed: fn(&M, Tensor<B, 4>, &mut dyn BlockProbe) -> Tensor<B, 2>,
        selected: fn(&M, Tensor<B, 4>, &mut CheckpointTape<B>, BlockFilter) -> Tensor<B, 2>,
    ) -> Result<BenchRecord>
    where
        B: CheckpointBackend,
        M: AutodiffModule<B>,
    {
        let first = feed.next();
        let plan = self.plan::<B, _>(&model, stack, device, |m, probe| {
            probed(m, first.images.clone(), probe)
        })?;
        self.time(
            model,
            stack,
            device,
            feed,
            |model, tape, batch: ImageBatch<B>| {
                // No plan: no block is checkpointed, which is the plain forward pass.
                let logits = match &plan {
                    None => selected(model, batch.images, tape, &|_| false),
                    Some(plan) => selected(model, batch.images, tape, &**plan),
                };
                (logits, batch.labels)
            },
        )
    }

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
        for _ in 0..counts.windows {
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
            record.window_step_secs.push(elapsed / counts.steps as f64);
            record.steps_done += counts.steps;
            report(&record);
        }
        record.step_secs = median(&mut record.window_step_secs.clone());
        record.samples_per_sec = record.step_secs.map(|s| record.batch as f64 / s);
        record.data_wait_fraction = median(&mut wait_fractions);
        record.peak_memory_bytes = read_memory(stack).map(|m| m.peak);
        record.status = Some(Status::Ok);
        Ok(record)
    }
}

/// `batch` sequences of `seq` tokens, one sample per row, no padding: ids spread over the
/// vocabulary, `[CLS]` at each row's start, labels alternating over `classes`.
pub fn synthetic_text(batch: usize, seq: usize, vocab: usize, classes: usize) -> TextBatch {
    let tokens = batch * seq;
    TextBatch {
        rows: batch,
        seq_len: seq,
        input_ids: (0..tokens)
            .map(|i| ((i * 7919 + 101) % vocab) as i64)
            .collect(),
        token_type_ids: vec![0; tokens],
        position_ids: (0..tokens).map(|i| (i % seq) as i64).collect(),
        segment_ids: vec![1; tokens],
        cls_index: (0..batch).map(|r| (r * seq) as i64).collect(),
        labels: (0..batch).map(|r| (r % classes) as i64).collect(),
    }
}

fn synthetic_labels<B: CheckpointBackend>(
    batch: usize,
    classes: usize,
    device: &B::Device,
) -> Tensor<B, 1, Int> {
    let labels: Vec<i64> = (0..batch).map(|i| (i % classes) as i64).collect();
    Tensor::from_data(TensorData::new(labels, [batch]), device)
}
