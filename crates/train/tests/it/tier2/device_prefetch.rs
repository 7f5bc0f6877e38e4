//! The device prefetcher and the on-device normalisation: prefetched batches equal the
//! loader's (images, labels, order, data positions) for any loader workers and prefetch
//! depth, u8 pixels normalised on the device equal the host normalisation within f32
//! rounding (both transfers, on the CPU stacks and on wgpu), text batches come through
//! unchanged, and a loader error reaches the step with the file's name.

use burn::backend::Autodiff;
use burn::backend::flex::{Flex, FlexDevice};
use burn::backend::wgpu::{Wgpu, WgpuDevice};
use burn::tensor::DType;
use burn::tensor::backend::Backend;
use burnacc_datasets::text::{TextBatch, TextLoader, TextLoaderConfig};
use burnacc_datasets::{
    HostBatch, Loader, LoaderConfig, Normalize, mock_class_name, mock_file_name,
};
use burnacc_tests::tolerance::DEVICE_NORMALIZE_F32;
use burnacc_train::stack::CpuAccBackend;
use burnacc_train::trainer::{
    BatchSource, DeviceBatches, Epochs, PixelTransfer, Upload, build_image_data,
    normalize_on_device, upload_pixels,
};
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::common::tiny_recipe;

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// `[2, 3, 5, 7]` random pixels with every value 0 and 255 present: an odd byte count, so the
/// packed transfer has a partial last word.
fn random_batch() -> HostBatch {
    let shape = [2, 3, 5, 7];
    let mut rng = StdRng::seed_from_u64(3);
    let mut pixels: Vec<u8> = (0..shape.iter().product::<usize>())
        .map(|_| rng.random())
        .collect();
    (pixels[0], pixels[1]) = (0, 255);
    HostBatch {
        pixels,
        shape,
        labels: vec![1, 0],
        normalize: Normalize::imagenet(),
    }
}

/// Both transfers carry the bytes exactly, and the normalisation equals the host's.
fn normalisation_equals_the_host<B: Backend>(device: &B::Device) {
    let batch = random_batch();
    for transfer in [PixelTransfer::Bytes, PixelTransfer::PackedWords] {
        if transfer == PixelTransfer::Bytes && PixelTransfer::for_device::<B>(device) != transfer {
            continue; // no u8 tensors on this device
        }
        let ints = upload_pixels::<B>(batch.pixels.clone(), batch.shape, transfer, device);
        assert_eq!(ints.dims(), batch.shape);
        if transfer == PixelTransfer::Bytes {
            // One byte per pixel on the device: a quarter of normalised f32.
            assert_eq!(ints.dtype(), DType::U8);
        }
        let ints: Vec<i64> = ints.into_data().convert::<i64>().to_vec().unwrap();
        let bytes: Vec<i64> = batch.pixels.iter().map(|&v| i64::from(v)).collect();
        assert_eq!(ints, bytes, "{transfer:?} transfer");
    }
    let images =
        normalize_on_device::<B>(batch.pixels.clone(), batch.shape, &batch.normalize, device);
    let images: Vec<f32> = images.into_data().convert::<f32>().to_vec().unwrap();
    let diff = max_abs_diff(&images, &batch.normalized());
    assert!(
        diff <= DEVICE_NORMALIZE_F32,
        "device vs host normalisation: {diff}"
    );
}

#[test]
fn normalisation_on_the_cpu_stacks_equals_the_host() {
    normalisation_equals_the_host::<Autodiff<Flex>>(&FlexDevice);
    normalisation_equals_the_host::<CpuAccBackend>(&Default::default());
}

#[test]
fn normalisation_on_wgpu_equals_the_host() {
    let device = WgpuDevice::default();
    normalisation_equals_the_host::<Autodiff<Wgpu>>(&device);
}

/// The first `count` batches from batch `first` of epoch `epoch`, through the prefetcher
/// `ahead` deep: (images, labels, epoch, batches in epoch).
fn prefetched<H, S>(
    loader: S,
    (epoch, first): (u64, usize),
    ahead: usize,
    count: usize,
    read: impl Fn(H::OnDevice) -> (Vec<f32>, Vec<i64>),
) -> Vec<(Vec<f32>, Vec<i64>, u64, usize)>
where
    H: Upload<Flex>,
    S: BatchSource<H> + Send + 'static,
{
    let mut batches =
        DeviceBatches::<Flex, H, S>::new(Epochs::new(loader, epoch, first), &FlexDevice, ahead);
    (0..count)
        .map(|_| {
            let placed = batches.next_batch().unwrap();
            let (images, labels) = read(placed.batch);
            (images, labels, placed.epoch, placed.batches_in_epoch)
        })
        .collect()
}

fn read_images(batch: <HostBatch as Upload<Flex>>::OnDevice) -> (Vec<f32>, Vec<i64>) {
    (
        batch.images.into_data().to_vec().unwrap(),
        batch.labels.into_data().convert::<i64>().to_vec().unwrap(),
    )
}

#[test]
fn prefetched_image_batches_equal_the_loaders() {
    let root = tempfile::tempdir().unwrap();
    // 24 training images in batches of 8: 3 per epoch. Start at the second batch of epoch
    // 1 (a resumed run) and read into epoch 3.
    let recipe = tiny_recipe(root.path(), 1, &[]);
    let data = build_image_data(&recipe).unwrap();
    let start = (1, 1);
    let count = 7;
    // The reference: the loader's batches, normalised on the host.
    let expected: Vec<_> = (0..3u64)
        .flat_map(|e| {
            let first = if e == 0 { start.1 } else { 0 };
            let epoch = start.0 + e;
            data.train
                .epoch_from(epoch, first)
                .enumerate()
                .map(move |(i, b)| (b.unwrap(), epoch, first + i + 1))
        })
        .take(count)
        .map(|(b, epoch, position)| (b.normalized(), b.labels, epoch, position))
        .collect();
    assert_eq!(
        expected.iter().map(|e| (e.2, e.3)).collect::<Vec<_>>(),
        [(1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (3, 1), (3, 2)]
    );
    for workers in [0, 1, 4] {
        let loader = Loader::new(
            data.train.dataset().clone(),
            LoaderConfig {
                workers,
                ..data.train.config().clone()
            },
        )
        .unwrap();
        for ahead in [0, 1, 3] {
            let got = prefetched(loader.clone(), start, ahead, count, read_images);
            for (g, e) in got.iter().zip(&expected) {
                let what = format!("{workers} workers, {ahead} ahead, batch {:?}", (e.2, e.3));
                assert_eq!((&g.1, g.2, g.3), (&e.1, e.2, e.3), "{what}");
                let diff = max_abs_diff(&g.0, &e.0);
                assert!(
                    diff <= DEVICE_NORMALIZE_F32,
                    "{what}: images differ by {diff}"
                );
            }
        }
    }
}

#[test]
fn prefetched_text_batches_equal_the_loaders() {
    let mut rng = StdRng::seed_from_u64(9);
    let ids: Vec<Vec<u32>> = (0..37)
        .map(|_| {
            (0..rng.random_range(2..20))
                .map(|_| rng.random_range(0..500))
                .collect()
        })
        .collect();
    let labels: Vec<usize> = (0..37).map(|i| i % 2).collect();
    let config = TextLoaderConfig {
        batch_size: 8,
        packing: Some(24),
        workers: 2,
        ..TextLoaderConfig::default()
    };
    let loader = TextLoader::new(ids, labels, config).unwrap();
    let expected: Vec<TextBatch> = (0..3)
        .flat_map(|e| loader.epoch(e).map(Result::unwrap))
        .take(10)
        .collect();
    let read = |batch: <TextBatch as Upload<Flex>>::OnDevice| {
        let ids: Vec<i64> = batch
            .input
            .input_ids
            .into_data()
            .convert::<i64>()
            .to_vec()
            .unwrap();
        let labels = batch.labels.into_data().convert::<i64>().to_vec().unwrap();
        (ids.iter().map(|&v| v as f32).collect(), labels)
    };
    for ahead in [0, 2] {
        let got = prefetched(loader.clone(), (0, 0), ahead, 10, read);
        for (g, e) in got.iter().zip(&expected) {
            let ids: Vec<f32> = e.input_ids.iter().map(|&v| v as f32).collect();
            assert_eq!((&g.0, &g.1), (&ids, &e.labels), "{ahead} ahead");
        }
    }
}

#[test]
fn a_loader_error_reaches_the_step_with_the_files_name() {
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(root.path(), 1, &["data.val_fraction=0.0"]);
    build_image_data(&recipe).unwrap(); // writes the mock tree
    let broken = root
        .path()
        .join("mock")
        .join(mock_class_name(2))
        .join(mock_file_name(2, 3));
    std::fs::write(&broken, b"not a JPEG").unwrap();
    let data = build_image_data(&recipe).unwrap();
    for (workers, ahead) in [(0, 0), (4, 2)] {
        let loader = Loader::new(
            data.train.dataset().clone(),
            LoaderConfig {
                workers,
                ..data.train.config().clone()
            },
        )
        .unwrap();
        let mut batches = DeviceBatches::<Flex, HostBatch, Loader>::new(
            Epochs::new(loader, 0, 0),
            &FlexDevice,
            ahead,
        );
        // 32 images in batches of 8: the broken one is in one of epoch 0's 4 batches.
        let error = (0..4)
            .find_map(|_| batches.next_batch().err())
            .expect("the broken file fails its batch");
        let message = format!("{error:#}");
        assert!(
            message.contains(&mock_file_name(2, 3)),
            "{workers} workers, {ahead} ahead: {message}"
        );
        // After the error the stream answers (an error), it does not hang.
        assert!(batches.next_batch().is_err() || ahead == 0);
    }
}
