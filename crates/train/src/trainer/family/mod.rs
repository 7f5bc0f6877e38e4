//! Model families: what the trainer and the bench need to know of a network, behind one
//! trait, and the one place that maps a recipe's `model.name` to its family.
//!
//! Adding a model: its folder in `models/`, its recipe section (`crates/recipe`), a file here
//! implementing [`ModelFamily`], and its line in [`with_family`].

mod bert;
mod host;
mod resnet;
mod swin;

pub use bert::{BertFamily, bert_forward_checkpointed, bert_forward_probed, bert_forward_selected};
pub use host::{HostData, Sources, synthetic_text};
pub use resnet::{
    ResNetFamily, forward_checkpointed, forward_probed, forward_selected, model_config,
};
pub use swin::{SwinFamily, swin_forward_probed, swin_forward_selected, swin_model_config};

use super::batch::Upload;
use super::bert_init::PretrainedSummary;
use super::classify::{Classify, ClassifyCheckpointed};
use crate::recipe::{ModelFamilyName, ModelName, Recipe};
use anyhow::Result;
use burn::module::AutodiffModule;
use burnacc_checkpoint::CheckpointBackend;
use burnacc_models::ReferenceExport;

/// A family of networks (ResNets, Swin Transformers, BERTs) on the autodiff backend `B`:
/// its configuration from the recipe, its construction, and (through its bounds) its forward
/// passes for training, checkpointing and evaluation.
pub trait ModelFamily<B: CheckpointBackend> {
    /// The host batches the family's networks read (images or text).
    type Host: HostData<B> + Upload<B::InnerBackend>;
    /// The network; its blocks can be checkpointed, and its inference copy classifies and
    /// exports under the reference implementation's names.
    type Net: ClassifyCheckpointed<B, Self::Host>
        + AutodiffModule<B, InnerModule: Classify<B::InnerBackend, Self::Host> + ReferenceExport>;
    /// The network's configuration.
    type Config;

    /// The configuration the recipe describes, for `classes` outputs and `channels` input
    /// channels (images); errors name the recipe key.
    fn config(recipe: &Recipe, classes: usize, channels: usize) -> Result<Self::Config>;

    /// The network with weights drawn by `device`'s own generator (the bench).
    fn build(config: &Self::Config, device: &B::Device) -> Self::Net;

    /// The network with weights drawn on the CPU from `seed` (the same on every device), then
    /// overwritten by the recipe's weights (`model.weights`, `model.pretrained`), if any.
    fn init(
        config: &Self::Config,
        recipe: &Recipe,
        seed: u64,
        device: &B::Device,
    ) -> Result<(Self::Net, Option<PretrainedSummary>)>;

    /// The JSON arguments that build the reference implementation's model (saved beside the
    /// exported weights).
    fn reference_config(config: &Self::Config) -> String;
}

/// Work generic over the model family, run by [`with_family`] with the recipe's.
pub trait FamilyTask<B: CheckpointBackend> {
    /// What the task returns.
    type Output;

    /// Runs the task with the family `F`.
    fn run<F: ModelFamily<B>>(self) -> Self::Output;
}

/// Runs `task` with the family of `name`: the registry of model families.
pub fn with_family<B: CheckpointBackend, T: FamilyTask<B>>(name: ModelName, task: T) -> T::Output {
    match name.family() {
        ModelFamilyName::ResNet => task.run::<ResNetFamily>(),
        ModelFamilyName::Swin => task.run::<SwinFamily>(),
        ModelFamilyName::Bert => task.run::<BertFamily>(),
    }
}
