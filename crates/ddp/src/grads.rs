//! Gradients as flat f32 vectors in a model's parameter order, and back.

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, Tensor};

/// Puts one reduced flat gradient back under its parameter, in its shape and dtype.
pub(crate) struct Slot<B: AutodiffBackend> {
    restore: Box<dyn FnOnce(&mut GradientsParams, Tensor<B::InnerBackend, 1>)>,
}

impl<B: AutodiffBackend> Slot<B> {
    pub(crate) fn restore(self, grads: &mut GradientsParams, flat: Tensor<B::InnerBackend, 1>) {
        (self.restore)(grads, flat)
    }
}

/// A step's gradients taken out of their container: one flat f32 vector per parameter with a
/// gradient, in the model's visit order, and how to put each back.
pub(crate) struct FlatGradients<B: AutodiffBackend> {
    /// What remains of the container (gradients of no parameter of the model).
    pub grads: GradientsParams,
    pub flats: Vec<Tensor<B::InnerBackend, 1>>,
    pub slots: Vec<Slot<B>>,
}

struct Take<B: AutodiffBackend> {
    grads: GradientsParams,
    flats: Vec<Tensor<B::InnerBackend, 1>>,
    slots: Vec<Slot<B>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Take<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        // A tied parameter is visited again; its gradient was taken the first time.
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) else {
            return;
        };
        let (dims, dtype) = (grad.dims(), grad.dtype());
        let flat = grad.reshape([dims.iter().product::<usize>()]);
        let flat = if dtype == DType::F32 {
            flat
        } else {
            flat.cast(DType::F32)
        };
        let id = param.id;
        self.flats.push(flat);
        self.slots.push(Slot {
            restore: Box::new(move |grads, flat| {
                let grad = flat.reshape(dims);
                let grad = if dtype == DType::F32 {
                    grad
                } else {
                    grad.cast(dtype)
                };
                grads.register::<B::InnerBackend, D>(id, grad);
            }),
        });
    }
}

/// Takes `model`'s gradients out of `grads`, flat, in the model's parameter order.
pub(crate) fn take_gradients<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: GradientsParams,
) -> FlatGradients<B> {
    let mut take = Take::<B> {
        grads,
        flats: Vec::new(),
        slots: Vec::new(),
    };
    model.visit(&mut take);
    FlatGradients {
        grads: take.grads,
        flats: take.flats,
        slots: take.slots,
    }
}

/// Consecutive runs of `flats` of at most `bucket_bytes` f32 bytes each (a vector larger than
/// that alone), as index lists.
pub(crate) fn buckets<T>(flats: &[Tensor<T, 1>], bucket_bytes: usize) -> Vec<Vec<usize>>
where
    T: burn::tensor::backend::Backend,
{
    let mut buckets: Vec<Vec<usize>> = Vec::new();
    let mut bytes = 0;
    for (i, flat) in flats.iter().enumerate() {
        let size = 4 * flat.dims()[0];
        match buckets.last_mut() {
            Some(bucket) if bytes + size <= bucket_bytes => {
                bucket.push(i);
                bytes += size;
            }
            _ => {
                buckets.push(vec![i]);
                bytes = size;
            }
        }
    }
    buckets
}
