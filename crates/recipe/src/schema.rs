//! The recipe schema: sections, keys and their defaults.
//!
//! Defaults follow the seed's ResNet-50 recipe (batch 128, 200 steps, SGD with momentum, mock
//! ImageNet-shaped data) so an empty `[section]` means "what PyTorch's reference script does".

use super::amp::AmpSection;
use super::device::{DeviceSpec, Mode};
use super::model::ModelSection;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A whole recipe file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Recipe {
    /// `[model]`: which network.
    pub model: ModelSection,
    /// `[data]`: which dataset and how it is loaded.
    pub data: DataSection,
    /// `[train]`: batch, steps, logging, evaluation, run folder.
    pub train: TrainSection,
    /// `[optim]`: optimizer and learning-rate schedule.
    pub optim: OptimSection,
    /// `[backend]`: mode and device.
    pub backend: BackendSection,
    /// `[amp]`: mixed precision.
    pub amp: AmpSection,
    /// `[checkpoint]`: gradient checkpointing of blocks.
    pub checkpoint: CheckpointSection,
    /// `[kernels]`: burnacc's fused kernels, each switched on by its key (mode acc).
    pub kernels: KernelsSection,
    /// `[ddp]`: data parallelism, for runs started by `launch`.
    pub ddp: DdpSection,
}

/// `[ddp]`: how the processes of a data-parallel run (`launch --nproc-per-node N`) exchange
/// gradients. A run started without `launch` is one process and ignores it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DdpSection {
    /// Gradients are all-reduced in buckets of at most this size (PyTorch DDP's
    /// `bucket_cap_mb`), e.g. `"25MiB"`, or bytes.
    pub bucket: ByteSize,
    /// The longest a process waits for the others in one collective operation (joining
    /// included), in seconds: a peer that dies or never starts ends the run with an error
    /// after this long, never a hang.
    pub timeout_secs: f64,
    /// Several devices of this machine trained in one process, one thread each (e.g.
    /// `["cuda:0", "cuda:1"]`); replaces `backend.device`. Empty (default): one device.
    pub devices: Vec<DeviceSpec>,
}

impl Default for DdpSection {
    /// 25 MiB buckets, 300 s.
    fn default() -> Self {
        Self {
            bucket: ByteSize::Text("25MiB".into()),
            timeout_secs: 300.0,
            devices: Vec::new(),
        }
    }
}

/// `[kernels]`: which of burnacc's fused kernels replace the ops they implement. In mode acc
/// every key the recipe leaves out is on (the optimizer keys when their optimizer is the
/// recipe's), so `acc` is accelerated as shipped and a key set to `false` opts out; in other
/// modes every key is off and setting one is refused.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelsSection {
    /// Every `layer_norm` the model calls (Burn's `nn::LayerNorm`) runs burnacc's fused
    /// LayerNorm: one autodiff node with a fused backward; CubeCL kernels on CubeCL devices.
    pub layer_norm: bool,
    /// Every `softmax` the model calls (Burn's `activation::softmax`: BERT's attention) runs
    /// as one autodiff node whose backward is one pass, `y ⊙ (dy − Σ dy ⊙ y)`
    /// (`burnacc_kernels::softmax`), instead of the five ops Burn's autodiff records.
    pub softmax: bool,
    /// A model's training-mode batch norm (ResNet's `BatchNorm`, with the ReLU that follows it
    /// where there is one) runs as one autodiff node with the analytic backward
    /// (`burnacc_backend::fused::batch_norm`): three CubeCL kernels each way on CubeCL devices,
    /// two multi-threaded passes each way on the CPU.
    pub batch_norm: bool,
    /// Adam/AdamW steps run as one multi-tensor update (`burnacc_kernels::optim`): CubeCL
    /// kernels a few launches per step on CubeCL devices, one fused loop per tensor on the CPU.
    /// Needs `optim.name = "adam"` or `"adamw"`.
    pub adam: bool,
    /// SGD steps run as one multi-tensor update, as `adam`. Needs `optim.name = "sgd"`.
    pub sgd: bool,
    /// A model's bias + exact GELU (BERT's feed-forward expansion) runs as one fused op after
    /// the matmul (`burnacc_backend::fused::bias_gelu`).
    pub bias_gelu: bool,
    /// A model's QuickGELU activations (`x·sigmoid(1.702x)`, `hidden_act = "quick-gelu"`) run
    /// as one fused op (`burnacc_backend::fused::quick_gelu`).
    pub quick_gelu: bool,
    /// A model's bias + dropout + residual add (BERT's attention and feed-forward outputs)
    /// runs as one fused op after the matmul, its mask regenerated in the backward from a seed
    /// drawn on the device (`burnacc_backend::fused::bias_dropout_add`).
    pub bias_dropout_add: bool,
    /// Swin's cyclic shift + pad + window partition, and its reverse, run as one fused gather
    /// each way (`burnacc_backend::fused::window_process`; TorchAcc's `WindowProcess`).
    pub window_process: bool,
    /// Swin's window attention adds the relative position bias (gathered from its table inside
    /// the kernel) and the shifted-window mask and takes the softmax in one fused op, forward
    /// and backward (`burnacc_backend::fused::window_softmax`; TorchAcc's `FusedSwinFmha`).
    pub swin_fmha: bool,
    /// The keys switched on by mode acc's defaults rather than by the recipe (dotted, e.g.
    /// `"kernels.layer_norm"`): a model that never calls their kernel is not reported, as a
    /// key the recipe switched on itself is.
    #[serde(skip)]
    pub by_default: Vec<&'static str>,
}

impl KernelsSection {
    /// The keys switched on, as dotted recipe keys (`"kernels.adam"`).
    pub fn enabled(&self) -> Vec<&'static str> {
        self.flags()
            .into_iter()
            .filter_map(|(key, on)| on.then_some(key))
            .collect()
    }

    /// Every key of the section, as dotted recipe keys.
    pub fn keys() -> Vec<&'static str> {
        Self::default().flags().map(|(key, _)| key).to_vec()
    }

    /// Mode acc's defaults: switches on every key not in `set` (the keys the recipe gives),
    /// the optimizer keys only for their optimizer, and records them in
    /// [`Self::by_default`]. Other modes keep every key as given.
    pub fn apply_mode_defaults(&mut self, mode: Mode, optimizer: OptimizerName, set: &[String]) {
        if mode != Mode::Acc {
            return;
        }
        let applies = |key: &str| match key {
            "kernels.adam" => matches!(optimizer, OptimizerName::Adam | OptimizerName::Adamw),
            "kernels.sgd" => optimizer == OptimizerName::Sgd,
            _ => true,
        };
        let given = |key: &str| set.iter().any(|s| s == key.trim_start_matches("kernels."));
        let mut by_default = Vec::new();
        for (key, flag) in self.flags_mut() {
            if applies(key) && !given(key) {
                *flag = true;
                by_default.push(key);
            }
        }
        self.by_default = by_default;
    }

    /// The keys the recipe switched on itself: mode acc's defaults switched off again. A run
    /// on a stack of another mode (a test or benchmark running one recipe in several modes)
    /// keeps only these, and is refused if any is on.
    pub fn without_defaults(&self) -> Self {
        let mut explicit = self.clone();
        for (key, flag) in explicit.flags_mut() {
            if self.by_default.contains(&key) {
                *flag = false;
            }
        }
        explicit.by_default.clear();
        explicit
    }

    fn flags_mut(&mut self) -> [(&'static str, &mut bool); 10] {
        [
            ("kernels.layer_norm", &mut self.layer_norm),
            ("kernels.softmax", &mut self.softmax),
            ("kernels.batch_norm", &mut self.batch_norm),
            ("kernels.adam", &mut self.adam),
            ("kernels.sgd", &mut self.sgd),
            ("kernels.bias_gelu", &mut self.bias_gelu),
            ("kernels.quick_gelu", &mut self.quick_gelu),
            ("kernels.bias_dropout_add", &mut self.bias_dropout_add),
            ("kernels.window_process", &mut self.window_process),
            ("kernels.swin_fmha", &mut self.swin_fmha),
        ]
    }

    fn flags(&self) -> [(&'static str, bool); 10] {
        let mut copy = self.clone();
        copy.flags_mut().map(|(key, flag)| (key, *flag))
    }
}

/// Which blocks a training step checkpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointMode {
    /// None: autodiff keeps every activation it needs (default).
    #[default]
    None,
    /// Every residual block: only block inputs are kept, blocks are recomputed in backward.
    Blocks,
    /// The blocks `checkpoint.budget` needs, chosen from each block's measured activation
    /// memory and forward time (`burnacc_checkpoint::plan_checkpoints`).
    Auto,
}

/// `[checkpoint]`
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSection {
    /// none, blocks or auto.
    pub mode: CheckpointMode,
    /// `auto`: the most activation memory a step may keep for backward (weights, gradients and
    /// optimizer state not included), e.g. `"8GiB"`, `"512MB"`, or bytes.
    pub budget: Option<ByteSize>,
}

/// A size in a recipe: bytes, or text with a unit (`"8GiB"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ByteSize {
    /// Bytes.
    Bytes(u64),
    /// A number with a unit, parsed by [`super::parse_byte_size`].
    Text(String),
}

impl ByteSize {
    /// The size in bytes.
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            ByteSize::Bytes(0) => Err("must be at least 1 byte (got 0)".into()),
            ByteSize::Bytes(b) => Ok(*b),
            ByteSize::Text(t) => super::byte_size::parse_byte_size(t),
        }
    }
}

impl CheckpointSection {
    /// `budget` in bytes (checked when the recipe is read).
    pub fn budget_bytes(&self) -> Option<u64> {
        self.budget
            .as_ref()
            .map(|b| b.bytes().expect("checked by validate"))
    }
}

/// The dataset kinds a recipe can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetKind {
    /// A folder per class of JPEG/PNG files (ImageNet layout) at `data.path`.
    ImageFolder,
    /// Generated ImageNet-shaped JPEGs (written once into a cache folder, or `data.path`).
    MockImagenet,
    /// Fashion-MNIST's four IDX files at `data.path`.
    FashionMnist,
    /// Rotten Tomatoes snippets (fresh = 1, rotten = 0): the `.csv.bz2` corpus at `data.path`,
    /// default: the 4,866-snippet corpus fetched by `scripts/fetch_text_data.sh`.
    RottenTomatoes,
    /// SST-2-style `sentence<TAB>label` file at `data.path` (held-out: `data.val_path`).
    Sst2Tsv,
}

impl DatasetKind {
    /// True for the text datasets.
    pub fn is_text(self) -> bool {
        matches!(self, DatasetKind::RottenTomatoes | DatasetKind::Sst2Tsv)
    }

    /// The recipe's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetKind::ImageFolder => "image-folder",
            DatasetKind::MockImagenet => "mock-imagenet",
            DatasetKind::FashionMnist => "fashion-mnist",
            DatasetKind::RottenTomatoes => "rotten-tomatoes",
            DatasetKind::Sst2Tsv => "sst2-tsv",
        }
    }
}

/// What to do with an image that cannot be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnCorrupt {
    /// Stop with an error naming the file (default).
    #[default]
    Fail,
    /// Drop the sample, count it, and report the count at the end.
    Skip,
}

/// `[data]`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSection {
    /// image-folder, mock-imagenet, fashion-mnist (images); rotten-tomatoes, sst2-tsv (text).
    pub dataset: DatasetKind,
    /// Dataset root (image-folder, fashion-mnist); for mock-imagenet, where to write it
    /// (default: a cache folder); the corpus file (rotten-tomatoes, sst2-tsv).
    pub path: Option<PathBuf>,
    /// Held-out images (image-folder) or TSV file (sst2-tsv); without it `val_fraction` is
    /// held out.
    pub val_path: Option<PathBuf>,
    /// Fraction of the training samples held out for evaluation when there is no `val_path`.
    pub val_fraction: f64,
    /// Side of the square crop fed to the model (ImageNet: 224).
    pub image_size: usize,
    /// Shorter side after resizing, before cropping (ImageNet: 256). Default: image_size × 8/7.
    pub resize: Option<usize>,
    /// Random crop and horizontal flip on training images.
    pub augment: bool,
    /// Loader worker threads.
    pub workers: usize,
    /// Batches decoded ahead of the training step (bounded queue depth).
    pub prefetch: usize,
    /// Batches already on the device ahead of the training step, uploaded (and normalised)
    /// on a thread of their own while the step runs; 0 uploads inside the step.
    pub device_prefetch: usize,
    /// fail or skip an undecodable image.
    pub on_corrupt: OnCorrupt,
    /// `[data.mock]`: size of the generated mock ImageNet.
    pub mock: MockSection,
    /// Text: tokens per sample, `[CLS]` and `[SEP]` included; longer texts are truncated.
    pub max_length: usize,
    /// Text: pack several samples per row (block-diagonal attention) instead of padding each.
    pub packing: bool,
    /// Text: the tokenizer's `tokenizer.json` (default: bert-base-uncased's WordPiece as
    /// fetched by `scripts/fetch_text_data.sh`).
    pub tokenizer: Option<PathBuf>,
}

impl Default for DataSection {
    fn default() -> Self {
        Self {
            dataset: DatasetKind::MockImagenet,
            path: None,
            val_path: None,
            val_fraction: 0.1,
            image_size: 224,
            resize: None,
            augment: true,
            workers: 2,
            prefetch: 4,
            device_prefetch: 1,
            on_corrupt: OnCorrupt::Fail,
            mock: MockSection::default(),
            max_length: 128,
            packing: false,
            tokenizer: None,
        }
    }
}

/// `[data.mock]`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockSection {
    /// Number of classes (ImageNet: 1000).
    pub classes: usize,
    /// JPEG files written per class.
    pub images_per_class: usize,
    /// Side of the square JPEGs written.
    pub image_size: usize,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for MockSection {
    fn default() -> Self {
        Self {
            classes: 1000,
            images_per_class: 4,
            image_size: 256,
            seed: 0,
        }
    }
}

/// `[train]`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainSection {
    /// Samples per step, or per micro-batch with `accumulate` > 1.
    pub batch_size: usize,
    /// Micro-batches of `batch_size` per optimizer step, their gradients summed (gradient
    /// accumulation: an effective batch of `accumulate × batch_size` in the memory of one).
    pub accumulate: usize,
    /// Optimizer steps; the run ends after this many (epochs repeat as needed).
    pub max_steps: usize,
    /// Read metrics back from the device every this many steps (and at the last step).
    pub log_every: usize,
    /// Seed of the model init, the data order and the augmentation.
    pub seed: u64,
    /// Evaluate on the held-out split at the end and print the accuracy.
    pub eval: bool,
    /// Also evaluate every this many steps (0: only at the end), logged in `log.jsonl`.
    pub eval_every: usize,
    /// Batch size for evaluation (default: `batch_size`).
    pub eval_batch_size: Option<usize>,
    /// Cap on evaluation batches (default: the whole held-out split): a fixed-seed sample of
    /// the whole split.
    pub eval_max_batches: Option<usize>,
    /// Folder under which each run gets a fresh `run-N` folder (default: `runs/<recipe name>`).
    pub run_dir: Option<PathBuf>,
    /// Write the trained model (Burn's recorder) into the run folder, and a checkpoint of the
    /// whole training state at the last step (`checkpoints/step-<S>/`, see `train --resume`).
    pub save_model: bool,
    /// Also write a checkpoint every this many steps (0: only at the end, with `save_model`).
    pub save_every: usize,
    /// Checkpoints kept in the run folder, the newest (0: all).
    pub keep_last: usize,
    /// What a step whose loss is NaN or infinite does.
    pub on_nonfinite: OnNonFinite,
    /// With `on_nonfinite = "skip"`: the run stops after this many consecutive steps with a
    /// non-finite loss (a run that only skips has diverged).
    pub nonfinite_limit: usize,
}

/// `train.on_nonfinite`: what a step whose loss is NaN or infinite does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnNonFinite {
    /// The run stops at the next logged step, naming the step and the loss (nothing is read
    /// back between logged steps); no checkpoint or model with non-finite weights is written.
    Stop,
    /// The step's update is skipped on the device (weights and optimizer state stay as they
    /// were; with the loss scaler, its scale backs off as for overflowing gradients); the run
    /// stops after `train.nonfinite_limit` consecutive such steps.
    Skip,
}

impl Default for TrainSection {
    fn default() -> Self {
        Self {
            batch_size: 128,
            accumulate: 1,
            max_steps: 200,
            log_every: 10,
            seed: 42,
            eval: true,
            eval_every: 0,
            eval_batch_size: None,
            eval_max_batches: None,
            run_dir: None,
            save_model: true,
            save_every: 0,
            keep_last: 3,
            on_nonfinite: OnNonFinite::Stop,
            nonfinite_limit: 20,
        }
    }
}

/// Optimizers a recipe can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerName {
    /// SGD with (optionally Nesterov) momentum and L2 weight decay.
    Sgd,
    /// Adam with L2 weight decay.
    Adam,
    /// AdamW (decoupled weight decay).
    Adamw,
}

/// Learning-rate schedules a recipe can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// `lr` throughout (after warm-up).
    Constant,
    /// Cosine decay from `lr` to `min_lr` over `max_steps` (after warm-up): PyTorch's
    /// `CosineAnnealingLR` with `T_max` the steps after warm-up minus one.
    Cosine,
    /// `lr × gamma` every `step_size` steps (after warm-up): PyTorch's `StepLR`.
    Step,
    /// `lr × gamma` at each of `milestones` (steps after warm-up): PyTorch's `MultiStepLR`.
    Multistep,
    /// Linear decay from `lr` after warm-up to 0 at `max_steps`: Hugging Face's
    /// `get_linear_schedule_with_warmup`, BERT's fine-tuning schedule.
    Linear,
    /// PyTorch's `OneCycleLR` over `max_steps` (cosine annealing, two phases): from
    /// `lr / div_factor` up to `lr` over the first `pct_start` of the steps, then down to
    /// `lr / div_factor / final_div_factor`. Has its own warm-up (`warmup_steps` must be 0).
    Onecycle,
}

impl Schedule {
    /// Whether the learning rate at a step depends on `train.max_steps` (a resumed run may
    /// change `max_steps` only when it does not).
    pub fn depends_on_max_steps(self) -> bool {
        matches!(
            self,
            Schedule::Cosine | Schedule::Linear | Schedule::Onecycle
        )
    }
}

/// `[optim]`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OptimSection {
    /// sgd, adam or adamw.
    pub name: OptimizerName,
    /// Peak learning rate.
    pub lr: f64,
    /// SGD momentum (0 disables it).
    pub momentum: f64,
    /// Nesterov momentum (SGD).
    pub nesterov: bool,
    /// Weight decay (L2 for sgd/adam, decoupled for adamw).
    pub weight_decay: f64,
    /// Adam's β1, β2.
    pub betas: [f64; 2],
    /// Adam's ε.
    pub eps: f64,
    /// constant, cosine, step, multistep, linear or onecycle.
    pub schedule: Schedule,
    /// Linear warm-up steps from 0 to `lr`.
    pub warmup_steps: usize,
    /// Final learning rate of the cosine schedule.
    pub min_lr: f64,
    /// `step`: steps between decays.
    pub step_size: usize,
    /// `step`, `multistep`: the decay factor.
    pub gamma: f64,
    /// `multistep`: the steps (after warm-up) at which the rate decays, increasing.
    pub milestones: Vec<usize>,
    /// `onecycle`: the fraction of the steps spent rising.
    pub pct_start: f64,
    /// `onecycle`: the first rate is `lr / div_factor`.
    pub div_factor: f64,
    /// `onecycle`: the last rate is `lr / div_factor / final_div_factor`.
    pub final_div_factor: f64,
}

impl Default for OptimSection {
    fn default() -> Self {
        Self {
            name: OptimizerName::Sgd,
            lr: 0.1,
            momentum: 0.9,
            nesterov: false,
            weight_decay: 1e-4,
            betas: [0.9, 0.999],
            eps: 1e-8,
            schedule: Schedule::Cosine,
            warmup_steps: 0,
            min_lr: 0.0,
            step_size: 30,
            gamma: 0.1,
            milestones: Vec::new(),
            pct_start: 0.3,
            div_factor: 25.0,
            final_div_factor: 1e4,
        }
    }
}

/// `[backend]`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackendSection {
    /// eager, fused or acc.
    pub mode: Mode,
    /// auto, cpu, wgpu, cuda or cuda:N.
    pub device: DeviceSpec,
}

impl Default for BackendSection {
    fn default() -> Self {
        Self {
            mode: Mode::Acc,
            device: DeviceSpec::Auto,
        }
    }
}
