//! Module walks used around a recompute: the values of a module's buffers (batch norm's
//! running statistics) saved and put back, and its parameter gradients gathered.

use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorPrimitive};
use std::collections::{HashMap, HashSet};

/// The values of a module's untracked float tensors (buffers), by id.
pub(crate) struct Buffers<B: AutodiffBackend>(HashMap<ParamId, TensorPrimitive<B>>);

impl<B: AutodiffBackend> Buffers<B> {
    /// Saves the current values.
    pub(crate) fn save<M: Module<B>>(module: &M) -> Self {
        let mut buffers = Self(HashMap::new());
        module.visit(&mut buffers);
        buffers
    }

    /// Writes the saved values back. Batch norm's running statistics live behind shared
    /// pointers, so a recompute updates the module's own statistics a second time unless they
    /// are put back.
    pub(crate) fn restore<M: Module<B>>(mut self, module: M) -> M {
        module.map(&mut self)
    }
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Buffers<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let tensor = param.val();
        if !tensor.is_require_grad() {
            self.0.insert(param.id, tensor.into_primitive());
        }
    }
}

impl<B: AutodiffBackend> ModuleMapper<B> for Buffers<B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let tensor = match self.0.remove(&id) {
            Some(saved) if !tensor.is_require_grad() => Tensor::from_primitive(saved),
            _ => tensor,
        };
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// Adds the gradients in `grads` of `module`'s parameters to `total` (a parameter used in
/// several segments gets the sum of its parts).
pub(crate) fn accumulate<B: AutodiffBackend, M: AutodiffModule<B>>(
    total: &mut GradientsParams,
    grads: &B::Gradients,
    module: &M,
) {
    struct Add<'a, B: AutodiffBackend> {
        total: &'a mut GradientsParams,
        grads: &'a B::Gradients,
        seen: HashSet<ParamId>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Add<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if !self.seen.insert(param.id) {
                return;
            }
            let Some(grad) = param.val().grad(self.grads) else {
                return;
            };
            let sum = match self.total.remove::<B::InnerBackend, D>(param.id) {
                Some(earlier) => earlier + grad,
                None => grad,
            };
            self.total.register(param.id, sum);
        }
    }
    module.visit(&mut Add::<B> {
        total,
        grads,
        seen: HashSet::new(),
    });
}

/// Initializes every lazily initialized parameter of `module` in place. A clone of an
/// uninitialized parameter initializes on its own, with other random values: the forward pass
/// and the recompute must see the same weights.
pub(crate) fn materialize<B: AutodiffBackend, M: Module<B>>(module: &M) {
    struct Touch;
    impl<B: AutodiffBackend> ModuleVisitor<B> for Touch {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let _ = param.val();
        }
    }
    module.visit(&mut Touch);
}
