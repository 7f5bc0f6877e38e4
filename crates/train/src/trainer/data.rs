//! The recipe's `[data]` section for images → loaders of the training and held-out splits.

use crate::recipe::{DataSection, DatasetKind, OnCorrupt, Recipe};
use anyhow::{Context, Result, bail};
use burnacc_datasets::{
    CorruptPolicy, FashionMnist, FashionMnistConfig, FashionMnistSplit, ImageDataset, ImageFolder,
    ImageFolderConfig, ImageTransform, Loader, LoaderConfig, MockOutcome, MockSpec, Normalize,
    Subset, TransformMode, default_mock_dir, fashion_mnist_dir, generate_mock_imagenet,
    stratified_split,
};
use std::path::PathBuf;
use std::sync::Arc;

/// Loaders and facts about the data, ready for the training loop.
#[derive(Clone)]
pub struct ImageSources {
    /// Training batches (shuffled, last partial batch dropped so every step has a full batch).
    pub train: Loader,
    /// Held-out batches (in order), if the dataset has a held-out split.
    pub eval: Option<Loader>,
    /// Classes the model must output (the recipe's `model.num_classes`, else the dataset's).
    pub num_classes: usize,
    /// Image channels (3 for RGB folders, 1 for Fashion-MNIST).
    pub channels: usize,
    /// Training samples per epoch.
    pub train_samples: usize,
    /// Held-out samples.
    pub eval_samples: usize,
    folders: Vec<Arc<ImageFolder>>,
}

impl ImageSources {
    /// Images skipped as undecodable so far (`data.on_corrupt = "skip"`).
    pub fn skipped(&self) -> u64 {
        self.folders.iter().map(|f| f.skipped()).sum()
    }
}

/// Opens (or generates) the recipe's dataset and builds its loaders.
pub fn build_image_data(recipe: &Recipe) -> Result<ImageSources> {
    let d = &recipe.data;
    let (train, eval, folders): Splits = match d.dataset {
        DatasetKind::FashionMnist => open_fashion_mnist(d)?,
        DatasetKind::ImageFolder => {
            let root = d
                .path
                .clone()
                .context("data.path is required for image-folder")?;
            open_folders(d, root, recipe.train.seed)?
        }
        DatasetKind::MockImagenet => {
            let root = generated_mock_imagenet(d)?;
            open_folders(d, root, recipe.train.seed)?
        }
        DatasetKind::RottenTomatoes | DatasetKind::Sst2Tsv => {
            bail!("{} is a text dataset", d.dataset.as_str())
        }
    };

    let num_classes = model_classes(recipe, train.num_classes())?;
    let channels = train.shape()[0];
    let t = &recipe.train;
    let train_config = LoaderConfig {
        batch_size: t.batch_size,
        shuffle: true,
        drop_last: train.len() >= t.batch_size,
        workers: d.workers,
        prefetch: d.prefetch,
        seed: t.seed,
    };
    let eval_config = LoaderConfig {
        batch_size: t.eval_batch_size.unwrap_or(t.batch_size),
        // A capped evaluation reads a fixed-seed sample of the whole held-out set (its
        // first batches of a shuffled order), never the first files of a sorted folder.
        shuffle: t.eval_max_batches.is_some(),
        drop_last: false,
        ..train_config.clone()
    };
    let train_samples = train.len();
    let eval_samples = eval.as_ref().map_or(0, |e| e.len());
    if train_samples == 0 {
        bail!(
            "the training split is empty (data.val_fraction = {} holds out everything)",
            d.val_fraction
        );
    }
    Ok(ImageSources {
        train: Loader::new(train, train_config)?,
        eval: eval
            .filter(|e| !e.is_empty())
            .map(|e| Loader::new(e, eval_config))
            .transpose()?,
        num_classes,
        channels,
        train_samples,
        eval_samples,
        folders,
    })
}

/// Fashion-MNIST's training and test splits at `data.image_size` 28 or 32 (padded).
fn open_fashion_mnist(d: &DataSection) -> Result<Splits> {
    let dir = d.path.clone().unwrap_or_else(fashion_mnist_dir);
    let pad_to_32 = match d.image_size {
        28 => false,
        32 => true,
        other => {
            bail!("data.image_size = {other}: fashion-mnist images are 28×28 (or 32×32 padded)")
        }
    };
    let config = FashionMnistConfig {
        pad_to_32,
        augment: d.augment,
        ..FashionMnistConfig::default()
    };
    let train = FashionMnist::open(&dir, FashionMnistSplit::Train, config.clone())?;
    let eval_config = FashionMnistConfig {
        augment: false,
        ..config
    };
    let eval = FashionMnist::open(&dir, FashionMnistSplit::Test, eval_config)?;
    Ok((Arc::new(train), Some(Arc::new(eval)), Vec::new()))
}

/// The mock ImageNet of `[data.mock]`, written first if its folder does not hold it yet.
fn generated_mock_imagenet(d: &DataSection) -> Result<PathBuf> {
    let spec = MockSpec {
        classes: d.mock.classes,
        images_per_class: d.mock.images_per_class,
        image_size: d.mock.image_size as u32,
        seed: d.mock.seed,
        ..MockSpec::default()
    };
    let root = d.path.clone().unwrap_or_else(|| default_mock_dir(&spec));
    let started = std::time::Instant::now();
    if generate_mock_imagenet(&root, &spec)? == MockOutcome::Generated {
        eprintln!(
            "data: wrote mock ImageNet ({} classes × {} JPEGs of {}px) to {} in {:.1}s",
            spec.classes,
            spec.images_per_class,
            spec.image_size,
            root.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(root)
}

/// Classes the model outputs: `model.num_classes` if set (at least the dataset's), else the
/// dataset's `dataset_classes`.
pub(super) fn model_classes(recipe: &Recipe, dataset_classes: usize) -> Result<usize> {
    match recipe.model.num_classes {
        Some(n) if n < dataset_classes => {
            bail!("model.num_classes = {n} is below the dataset's {dataset_classes} classes")
        }
        Some(n) => Ok(n),
        None => Ok(dataset_classes),
    }
}

type Splits = (
    Arc<dyn ImageDataset>,
    Option<Arc<dyn ImageDataset>>,
    Vec<Arc<ImageFolder>>,
);

/// An RGB image folder at `root`, its held-out split from `val_path` or `val_fraction`.
fn open_folders(d: &DataSection, root: PathBuf, seed: u64) -> Result<Splits> {
    let crop = d.image_size as u32;
    // torchvision's ImageNet ratio: resize 256 for a 224 crop.
    let resize = d.resize.map_or(crop * 8 / 7, |r| r as u32);
    let mode = if d.augment {
        TransformMode::Train
    } else {
        TransformMode::Eval
    };
    let corrupt = match d.on_corrupt {
        OnCorrupt::Fail => CorruptPolicy::Fail,
        OnCorrupt::Skip => CorruptPolicy::Skip,
    };
    let folder_config = |mode| ImageFolderConfig {
        channels: 3,
        transform: ImageTransform::new(resize, crop, mode, Normalize::imagenet()),
        corrupt,
    };
    let train_folder = Arc::new(ImageFolder::open(&root, folder_config(mode))?);
    match &d.val_path {
        Some(val_root) => {
            let eval_folder = Arc::new(ImageFolder::open(
                val_root,
                folder_config(TransformMode::Eval),
            )?);
            if eval_folder.classes() != train_folder.classes() {
                bail!(
                    "data.val_path {} has other class folders than data.path {}",
                    val_root.display(),
                    root.display()
                );
            }
            Ok((
                train_folder.clone(),
                Some(eval_folder.clone()),
                vec![train_folder, eval_folder],
            ))
        }
        None => {
            let eval_folder =
                Arc::new(train_folder.with_config(folder_config(TransformMode::Eval))?);
            let split = stratified_split(&train_folder.labels(), d.val_fraction, seed)?;
            let train = Subset::new(train_folder.clone(), split.train)?;
            let eval = Subset::new(eval_folder.clone(), split.val)?;
            // The eval view shares the training folder's set of skipped files: counted once.
            Ok((Arc::new(train), Some(Arc::new(eval)), vec![train_folder]))
        }
    }
}
