//! Where a benchmark's steps get their batches: one synthetic batch kept on the device (what
//! PyTorch's synthetic-data benchmarks time), or the recipe's real data through the trainer's
//! loader and device prefetcher (what training gets), with the time the step waited for it.

use anyhow::Result;
use burn::tensor::backend::Backend;
use burnacc_train::trainer::{BatchSource, DeviceBatches, Epochs, Upload};
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

/// Which batches a benchmark case trains on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataFeed {
    /// One random batch of the recipe's shapes, uploaded once.
    #[default]
    Synthetic,
    /// The recipe's `[data]`: decoded by the loader's workers, uploaded ahead by the
    /// prefetcher, as `train` does.
    Real,
}

impl DataFeed {
    /// `synthetic` | `real`.
    pub fn as_str(self) -> &'static str {
        match self {
            DataFeed::Synthetic => "synthetic",
            DataFeed::Real => "real",
        }
    }

    /// Parses a `--data` value.
    pub fn parse(name: &str) -> Result<Self> {
        match name.trim() {
            "synthetic" => Ok(DataFeed::Synthetic),
            "real" => Ok(DataFeed::Real),
            other => anyhow::bail!("--data: unknown data `{other}` (synthetic, real)"),
        }
    }
}

/// The batches of one case, on the device.
pub(super) enum Feed<B: Backend, H: Upload<B>, S> {
    /// The same batch every step.
    Fixed(H::OnDevice),
    /// The next batch of the recipe's data every step.
    Stream {
        batches: RefCell<DeviceBatches<B, H, S>>,
        /// Time spent waiting in [`Feed::next`] since the last [`Feed::take_wait`].
        waited: Cell<Duration>,
    },
}

impl<B, H, S> Feed<B, H, S>
where
    B: Backend,
    H: Upload<B>,
    S: BatchSource<H> + Send + 'static,
{
    /// `loader`'s batches from the start, `ahead` of them prefetched to `device`.
    pub(super) fn stream(loader: S, ahead: usize, device: &B::Device) -> Self {
        Feed::Stream {
            batches: RefCell::new(DeviceBatches::new(Epochs::new(loader, 0, 0), device, ahead)),
            waited: Cell::new(Duration::ZERO),
        }
    }

    /// The batch for the next step. A loader error ends the case: the benchmark child fails
    /// with it.
    pub(super) fn next(&self) -> H::OnDevice {
        match self {
            Feed::Fixed(batch) => batch.clone(),
            Feed::Stream { batches, waited } => {
                let started = Instant::now();
                let batch = batches
                    .borrow_mut()
                    .next_batch()
                    .unwrap_or_else(|e| panic!("reading the benchmark's data: {e:#}"));
                waited.set(waited.get() + started.elapsed());
                batch.batch
            }
        }
    }

    /// Time waited for data since the last call (`None` for a fixed batch).
    pub(super) fn take_wait(&self) -> Option<Duration> {
        match self {
            Feed::Fixed(_) => None,
            Feed::Stream { waited, .. } => Some(waited.replace(Duration::ZERO)),
        }
    }
}
