//! The two kinds of host batch (images, text): where a recipe's loaders of each kind come
//! from, and the synthetic batch the bench times a network on.

use super::super::Data;
use super::super::batch::{ImageBatch, TextInputBatch, Upload};
use super::super::source::BatchSource;
use crate::recipe::{DatasetKind, Recipe};
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Int, Tensor, TensorData};
use burnacc_datasets::text::{TextBatch, TextLoader};
use burnacc_datasets::{HostBatch, Loader};

/// A recipe's loaders of one kind of batch.
pub struct Sources<S> {
    /// Training batches.
    pub train: S,
    /// Held-out batches, if the dataset has a held-out split.
    pub eval: Option<S>,
    /// Classes the model outputs.
    pub classes: usize,
    /// Image channels (1 for text, which has none).
    pub channels: usize,
}

/// A kind of host batch a model family reads, put on devices of `B`.
pub trait HostData<B: Backend>: Upload<B> + Sized {
    /// The loader of such batches.
    type Source: BatchSource<Self> + Clone + Send + 'static;

    /// The loaders of `data`, if it holds batches of this kind (`None`: the recipe's dataset
    /// feeds another kind of model, which the recipe check rejects first).
    fn sources(data: &Data) -> Option<Sources<Self::Source>>;

    /// Classes and channels of the bench's synthetic batches for `recipe`.
    fn synthetic_shape(recipe: &Recipe) -> (usize, usize);

    /// A synthetic batch on `device` of `recipe.train.batch_size` samples, with `classes`
    /// classes and `channels` channels (the bench's fixed batch: the loader and the upload are
    /// not timed).
    fn synthetic(
        recipe: &Recipe,
        classes: usize,
        channels: usize,
        device: &B::Device,
    ) -> Self::OnDevice;
}

impl<B: Backend> HostData<B> for HostBatch {
    type Source = Loader;

    fn sources(data: &Data) -> Option<Sources<Loader>> {
        match data {
            Data::Images(d) => Some(Sources {
                train: d.train.clone(),
                eval: d.eval.clone(),
                classes: d.num_classes,
                channels: d.channels,
            }),
            Data::Text(_) => None,
        }
    }

    /// `model.num_classes`, else the mock ImageNet's class count; one channel for
    /// Fashion-MNIST, else three.
    fn synthetic_shape(recipe: &Recipe) -> (usize, usize) {
        let classes = recipe.model.num_classes.unwrap_or(recipe.data.mock.classes);
        let channels = match recipe.data.dataset {
            DatasetKind::FashionMnist => 1,
            _ => 3,
        };
        (classes, channels)
    }

    /// Standard normal images `[batch, channels, size, size]`, labels cycling over the
    /// classes.
    fn synthetic(
        recipe: &Recipe,
        classes: usize,
        channels: usize,
        device: &B::Device,
    ) -> ImageBatch<B> {
        let batch = recipe.train.batch_size;
        let size = recipe.data.image_size;
        let images = Tensor::<B, 4>::random(
            [batch, channels, size, size],
            Distribution::Normal(0.0, 1.0),
            device,
        );
        let labels: Vec<i64> = (0..batch).map(|i| (i % classes) as i64).collect();
        let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [batch]), device);
        ImageBatch { images, labels }
    }
}

impl<B: Backend> HostData<B> for TextBatch {
    type Source = TextLoader;

    fn sources(data: &Data) -> Option<Sources<TextLoader>> {
        match data {
            Data::Text(d) => Some(Sources {
                train: d.train.clone(),
                eval: d.eval.clone(),
                classes: d.num_classes,
                channels: 1,
            }),
            Data::Images(_) => None,
        }
    }

    /// Sentiment: two classes.
    fn synthetic_shape(_recipe: &Recipe) -> (usize, usize) {
        (2, 1)
    }

    /// [`synthetic_text`] of `data.max_length` tokens over the vocabulary of the recipe's
    /// BERT, uploaded.
    fn synthetic(
        recipe: &Recipe,
        classes: usize,
        _channels: usize,
        device: &B::Device,
    ) -> TextInputBatch<B> {
        let vocab = super::super::bert_config(recipe).vocab_size;
        let text = synthetic_text(
            recipe.train.batch_size,
            recipe.data.max_length,
            vocab,
            classes,
        );
        Upload::<B>::upload(text, device)
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
