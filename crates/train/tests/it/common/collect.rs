//! Every float tensor of a model and every parameter gradient, flattened to f32.

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, Tensor};

/// A visitor collecting the model's float tensors (parameters and running statistics) and
/// the gradients `grads` holds for them, flattened to f32, in visiting order.
pub struct Collect<'a> {
    pub grads: &'a mut GradientsParams,
    pub values: Vec<Vec<f32>>,
    pub gradients: Vec<Vec<f32>>,
}

impl<'a> Collect<'a> {
    pub fn new(grads: &'a mut GradientsParams) -> Self {
        Self {
            grads,
            values: Vec::new(),
            gradients: Vec::new(),
        }
    }
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let tensor = param.val();
        if let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) {
            self.gradients
                .push(grad.cast(DType::F32).into_data().to_vec().unwrap());
        }
        self.values.push(
            tensor
                .inner()
                .cast(DType::F32)
                .into_data()
                .to_vec()
                .unwrap(),
        );
    }
}
