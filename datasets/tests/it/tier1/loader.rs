//! Loader: coverage, determinism across worker counts, shuffling, errors, early drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use burnacc_datasets::{
    DataError, HostBatch, ImageDataset, ImageSample, Loader, LoaderConfig, Normalize,
};

/// Sample i is `[i, seed % 1e6]` with shape [1, 1, 2], label i % 3; optionally slow, failing
/// at one index, or skipping some.
#[derive(Default)]
struct Numbers {
    n: usize,
    delay: Duration,
    fail_at: Option<usize>,
    skip_below: usize,
    calls: AtomicUsize,
}

impl ImageDataset for Numbers {
    fn len(&self) -> usize {
        self.n
    }
    fn num_classes(&self) -> usize {
        3
    }
    fn shape(&self) -> [usize; 3] {
        [1, 1, 2]
    }
    fn normalize(&self) -> Normalize {
        Normalize::identity(1)
    }
    fn get(&self, index: usize, rng_seed: u64) -> Result<Option<ImageSample>, DataError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(self.delay);
        if self.fail_at == Some(index) {
            return Err(DataError::IndexOutOfRange { index, len: 0 });
        }
        if index < self.skip_below {
            return Ok(None);
        }
        let pixels = vec![index as u8, (rng_seed % 251) as u8];
        Ok(Some(ImageSample {
            pixels,
            shape: [1, 1, 2],
            label: index % 3,
        }))
    }
}

fn numbers(n: usize) -> Arc<Numbers> {
    Arc::new(Numbers {
        n,
        ..Numbers::default()
    })
}

fn config(batch_size: usize, workers: usize) -> LoaderConfig {
    LoaderConfig {
        batch_size,
        shuffle: true,
        drop_last: false,
        workers,
        prefetch: 2,
        seed: 99,
    }
}

fn run(ds: Arc<Numbers>, cfg: LoaderConfig, epoch: u64) -> Vec<HostBatch> {
    Loader::new(ds, cfg)
        .unwrap()
        .epoch(epoch)
        .map(Result::unwrap)
        .collect()
}

fn indices(batches: &[HostBatch]) -> Vec<usize> {
    batches
        .iter()
        .flat_map(|b| b.pixels.chunks(2).map(|s| s[0] as usize))
        .collect()
}

#[test]
fn every_index_once_per_epoch() {
    for (drop_last, expect_batches, expect_samples) in [(false, 15, 103), (true, 14, 98)] {
        let cfg = LoaderConfig {
            drop_last,
            ..config(7, 3)
        };
        let loader = Loader::new(numbers(103), cfg.clone()).unwrap();
        assert_eq!(loader.num_batches(), expect_batches);
        let batches = run(numbers(103), cfg, 4);
        assert_eq!(batches.len(), expect_batches);
        let mut seen = indices(&batches);
        assert_eq!(seen.len(), expect_samples);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), expect_samples, "no index twice");
        let b = &batches[0];
        assert_eq!(b.shape, [7, 1, 1, 2]);
        assert_eq!(b.pixels.len(), 14);
        for (s, label) in b.pixels.chunks(2).zip(&b.labels) {
            assert_eq!(*label, (s[0] as usize % 3) as i64);
        }
        if !drop_last {
            assert_eq!(batches.last().unwrap().shape, [5, 1, 1, 2]);
        }
    }
}

#[test]
fn order_and_augmentation_do_not_depend_on_workers() {
    let reference = run(numbers(50), config(4, 1), 2);
    for workers in [0, 3, 8] {
        assert_eq!(
            run(numbers(50), config(4, workers), 2),
            reference,
            "workers = {workers}"
        );
    }
    let slow = Arc::new(Numbers {
        n: 50,
        delay: Duration::from_millis(1),
        ..Numbers::default()
    });
    assert_eq!(
        run(
            slow,
            LoaderConfig {
                prefetch: 0,
                ..config(4, 3)
            },
            2
        ),
        reference
    );
}

#[test]
fn shuffle_changes_across_epochs_and_not_without_it() {
    let e0 = indices(&run(numbers(40), config(8, 2), 0));
    let e1 = indices(&run(numbers(40), config(8, 2), 1));
    assert_ne!(e0, e1);
    assert_eq!(
        e0,
        indices(&run(numbers(40), config(8, 2), 0)),
        "same epoch, same order"
    );
    let mut sorted = e0.clone();
    sorted.sort_unstable();
    assert_ne!(e0, sorted, "shuffled");

    let plain = LoaderConfig {
        shuffle: false,
        ..config(8, 2)
    };
    assert_eq!(
        indices(&run(numbers(40), plain.clone(), 5)),
        (0..40).collect::<Vec<_>>()
    );
    // augmentation seeds still change per epoch without shuffling
    let seeds = |e| run(numbers(40), plain.clone(), e)[0].pixels[1];
    assert_ne!(seeds(0), seeds(1));
}

#[test]
fn error_arrives_in_order_and_ends_the_epoch() {
    let ds = Arc::new(Numbers {
        n: 40,
        fail_at: Some(13),
        ..Numbers::default()
    });
    let cfg = LoaderConfig {
        shuffle: false,
        ..config(4, 3)
    };
    let out: Vec<_> = Loader::new(ds, cfg).unwrap().epoch(0).collect();
    assert_eq!(out.len(), 4, "batches 0..3 then the error in batch 3");
    assert!(out[..3].iter().all(Result::is_ok));
    assert!(matches!(
        out[3],
        Err(DataError::IndexOutOfRange { index: 13, .. })
    ));
}

#[test]
fn skipped_samples_shorten_batches_and_empty_batches_vanish() {
    let ds = Arc::new(Numbers {
        n: 10,
        skip_below: 5,
        ..Numbers::default()
    });
    let cfg = LoaderConfig {
        shuffle: false,
        ..config(4, 2)
    };
    let sizes: Vec<_> = run(ds, cfg, 0).iter().map(HostBatch::len).collect();
    assert_eq!(
        sizes,
        [3, 2],
        "[0..4) all skipped, [4..8) keeps 3, [8..10) keeps 2"
    );
}

#[test]
fn early_drop_stops_workers() {
    let ds = Arc::new(Numbers {
        n: 10_000,
        delay: Duration::from_millis(2),
        ..Numbers::default()
    });
    let loader = Loader::new(ds.clone(), config(8, 4)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut epoch = loader.epoch(0);
        let first = epoch.next().unwrap().unwrap();
        drop(epoch);
        drop(loader);
        tx.send(first.len()).unwrap();
    });
    let got = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("dropping an epoch must not hang");
    assert_eq!(got, 8);
    assert_eq!(
        Arc::strong_count(&ds),
        1,
        "worker threads have exited and released the dataset"
    );
    // read-ahead is bounded: at most (workers + prefetch + 1) batches were started
    let calls = ds.calls.load(Ordering::Relaxed);
    assert!(calls <= 8 * (4 + 2 + 1), "{calls} samples built");
}

#[test]
fn epoch_can_move_to_another_thread_and_empty_datasets_work() {
    let loader = Loader::new(numbers(9), config(4, 2)).unwrap();
    let epoch = loader.epoch(0);
    let n = std::thread::spawn(move || epoch.count()).join().unwrap();
    assert_eq!(n, 3);
    assert_eq!(
        Loader::new(numbers(0), config(4, 2))
            .unwrap()
            .epoch(0)
            .count(),
        0
    );
    assert!(Loader::new(numbers(3), config(0, 1)).is_err());
}

#[test]
fn sharded_ranks_together_serve_each_batch_of_the_joined_loader() {
    let world = 2;
    let joined = config(8, 1);
    for epoch in 0..2 {
        let whole = run(
            numbers(30),
            LoaderConfig {
                drop_last: true,
                ..joined.clone()
            },
            epoch,
        );
        let ranks: Vec<Vec<HostBatch>> = (0..world)
            .map(|rank| {
                let cfg = LoaderConfig {
                    batch_size: 4,
                    drop_last: true,
                    ..joined.clone()
                };
                Loader::new(numbers(30), cfg)
                    .unwrap()
                    .sharded(burnacc_datasets::Shard::new(rank, world))
                    .epoch(epoch)
                    .map(Result::unwrap)
                    .collect()
            })
            .collect();
        // 30 samples: 15 per rank, 3 full batches of 4 each, like 3 batches of 8 joined.
        assert_eq!(whole.len(), 3);
        for (step, batch) in whole.iter().enumerate() {
            let mut together: Vec<usize> = ranks
                .iter()
                .flat_map(|r| indices(std::slice::from_ref(&r[step])))
                .collect();
            let mut expected = indices(std::slice::from_ref(batch));
            together.sort();
            expected.sort();
            assert_eq!(together, expected, "epoch {epoch} step {step}");
        }
        assert!(ranks.iter().all(|r| r.len() == 3));
    }
}
