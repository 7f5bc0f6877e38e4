//! [`DeviceBatches`]: the training batches of consecutive epochs, already on the device when
//! the step asks for them.
//!
//! A thread of its own takes each host batch from the loader (whose workers decode and
//! collate), uploads it and normalises it on the device ([`Upload`]) while the step before it
//! runs, `[data] device_prefetch` batches ahead; with `device_prefetch = 0` the step itself
//! uploads. The batches, their order and their positions are the loader's either way: one
//! thread consumes the loader in order, so prefetching changes when a batch is built, never
//! which. An error (an unreadable file under `on_corrupt = "fail"`, a panic while uploading)
//! arrives in its batch's place and ends the stream.
//!
//! On eager backends the upload and normalisation run on the prefetching thread. On fusion
//! backends the upload does, and the normalisation's element-wise ops are queued on that
//! thread's stream; Burn's fusion runs them when the step first reads the images.

use super::batch::Upload;
use super::source::BatchSource;
use anyhow::{Result, anyhow};
use burn::tensor::backend::Backend;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

/// A batch and where it stands in the data order.
pub struct Placed<D> {
    /// The batch (on the host or the device).
    pub batch: D,
    /// Samples in the batch.
    pub samples: usize,
    /// Its epoch.
    pub epoch: u64,
    /// Batches of `epoch` up to and including this one (a checkpoint's data position).
    pub batches_in_epoch: usize,
}

/// The host batches of epoch `epoch` after its first `first_batch`, then of every later epoch
/// in full; errors if an epoch yields no batch.
pub struct Epochs<H, S> {
    loader: S,
    epoch: u64,
    in_epoch: usize,
    batches: Box<dyn Iterator<Item = Result<H>> + Send>,
}

impl<H, S: BatchSource<H>> Epochs<H, S> {
    /// Starts at batch `first_batch` of epoch `epoch` (a resumed run's position).
    pub fn new(loader: S, epoch: u64, first_batch: usize) -> Self {
        let batches = loader.batches_from(epoch, first_batch);
        Epochs {
            loader,
            epoch,
            in_epoch: first_batch,
            batches,
        }
    }

    /// The next batch, into the next epoch when this one is done.
    pub fn next_placed(&mut self) -> Result<Placed<H>> {
        let batch = match self.batches.next() {
            Some(batch) => batch?,
            None => {
                self.epoch += 1;
                self.in_epoch = 0;
                self.batches = self.loader.batches(self.epoch);
                self.batches
                    .next()
                    .ok_or_else(|| anyhow!("the training split has no batch"))??
            }
        };
        self.in_epoch += 1;
        Ok(Placed {
            samples: S::samples(&batch),
            batch,
            epoch: self.epoch,
            batches_in_epoch: self.in_epoch,
        })
    }
}

/// Batches on the device, uploaded ahead of the step by a thread of their own (or by the
/// step). Dropping it stops the thread and joins it.
pub struct DeviceBatches<B: Backend, H: Upload<B>, S> {
    source: Source<B, H, S>,
}

enum Source<B: Backend, H: Upload<B>, S> {
    /// `device_prefetch = 0`: uploaded when asked for.
    Inline {
        epochs: Epochs<H, S>,
        device: B::Device,
    },
    /// Uploaded ahead on `thread`.
    Ahead {
        received: Receiver<Result<Placed<H::OnDevice>>>,
        thread: Option<JoinHandle<()>>,
        _backend: PhantomData<B>,
    },
}

impl<B, H, S> DeviceBatches<B, H, S>
where
    B: Backend,
    H: Upload<B>,
    S: BatchSource<H> + Send + 'static,
{
    /// Batches of `epochs` on `device`, `ahead` of them uploaded before they are asked for.
    pub fn new(epochs: Epochs<H, S>, device: &B::Device, ahead: usize) -> Self {
        let device = device.clone();
        if ahead == 0 {
            return DeviceBatches {
                source: Source::Inline { epochs, device },
            };
        }
        // The thread holds one uploaded batch while it waits to hand it over: `ahead - 1`
        // more wait in the channel.
        let (send, received) = sync_channel(ahead - 1);
        let thread = std::thread::Builder::new()
            .name("burnacc-device-prefetch".into())
            .spawn(move || {
                let mut epochs = epochs;
                loop {
                    let next = upload_next::<B, H, S>(&mut epochs, &device);
                    let failed = next.is_err();
                    // The consumer is gone (training ended), or the stream ended.
                    if send.send(next).is_err() || failed {
                        return;
                    }
                }
            })
            .expect("spawning the device prefetch thread");
        DeviceBatches {
            source: Source::Ahead {
                received,
                thread: Some(thread),
                _backend: PhantomData,
            },
        }
    }

    /// The next batch, on the device.
    pub fn next_batch(&mut self) -> Result<Placed<H::OnDevice>> {
        match &mut self.source {
            Source::Inline { epochs, device } => upload_next::<B, H, S>(epochs, device),
            Source::Ahead { received, .. } => received
                .recv()
                .map_err(|_| anyhow!("the device prefetch thread stopped after an error"))?,
        }
    }
}

impl<B: Backend, H: Upload<B>, S> Drop for DeviceBatches<B, H, S> {
    fn drop(&mut self) {
        if let Source::Ahead {
            received, thread, ..
        } = &mut self.source
        {
            // Closing the channel makes the thread's next hand-over fail, and it returns.
            let (_, closed) = sync_channel(0);
            drop(std::mem::replace(received, closed));
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// The next host batch of `epochs`, uploaded to `device`; a panic while uploading is an error.
fn upload_next<B: Backend, H: Upload<B>, S: BatchSource<H>>(
    epochs: &mut Epochs<H, S>,
    device: &B::Device,
) -> Result<Placed<H::OnDevice>> {
    let placed = epochs.next_placed()?;
    let Placed {
        batch,
        samples,
        epoch,
        batches_in_epoch,
    } = placed;
    let batch =
        std::panic::catch_unwind(AssertUnwindSafe(|| batch.upload(device))).map_err(|_| {
            anyhow!("uploading batch {batches_in_epoch} of epoch {epoch} to the device panicked")
        })?;
    Ok(Placed {
        batch,
        samples,
        epoch,
        batches_in_epoch,
    })
}
