//! Parameter paths and counts of any Burn module, and their PyTorch `state_dict` keys.
//!
//! Burn 0.21's [`Module::num_params`] counts every float tensor a module visits, and
//! `BatchNorm` visits its running statistics (`running_mean`, `running_var`, stored as
//! `RunningState`) like parameters. PyTorch's `sum(p.numel() for p in model.parameters())`
//! counts only trainable tensors, so [`num_trainable_params`] leaves the running statistics out
//! and reproduces the figures quoted by torchvision.
//!
//! A tensor's path is the dotted chain of field names and `Vec`/tuple indices that leads to it,
//! as Burn's derived `Module::visit` reports them (`layer1.0.downsample.1.gamma`); `Option`
//! adds nothing to the path. [`torch_key`] turns such a path into the key of the same tensor in
//! a PyTorch `state_dict`.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// Field names under which Burn's normalisation layers keep running statistics, which are
/// state, not trainable parameters (`BatchNorm::running_mean`, `BatchNorm::running_var`).
pub const RUNNING_STAT_NAMES: [&str; 2] = ["running_mean", "running_var"];

/// One float tensor of a module, in visit order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTensor {
    /// Dotted Burn path, e.g. `layer1.0.bn1.gamma`.
    pub path: String,
    /// Shape as Burn stores it (a `Linear` weight is `[d_input, d_output]`).
    pub shape: Vec<usize>,
    /// False for batch-norm running statistics, true for everything an optimiser updates.
    pub trainable: bool,
}

impl NamedTensor {
    /// Number of scalars in the tensor.
    pub fn num_elements(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Every float tensor of `module` (parameters and running statistics), in visit order, which
/// is field declaration order. Does not initialise lazily initialised parameters.
pub fn named_tensors<B: Backend, M: Module<B>>(module: &M) -> Vec<NamedTensor> {
    let mut collector = PathCollector {
        stack: Vec::new(),
        tensors: Vec::new(),
    };
    module.visit(&mut collector);
    collector.tensors
}

/// Number of trainable scalars of `module`: [`Module::num_params`] without batch-norm running
/// statistics. This is the figure PyTorch reports as `sum(p.numel() for p in m.parameters())`.
pub fn num_trainable_params<B: Backend, M: Module<B>>(module: &M) -> usize {
    named_tensors(module)
        .iter()
        .filter(|tensor| tensor.trainable)
        .map(NamedTensor::num_elements)
        .sum()
}

/// The PyTorch `state_dict` key of the tensor at Burn path `path`.
///
/// Burn's normalisation layers call their affine parameters `gamma` and `beta` where PyTorch
/// says `weight` and `bias`; every other component, indices included, is the same when the
/// Burn model mirrors the PyTorch one field for field. Layout is not changed by this mapping:
/// Burn's `Linear` weight is `[d_input, d_output]`, the transpose of PyTorch's
/// `[out_features, in_features]`; convolution weights are `[out, in / groups, kh, kw]` in both.
pub fn torch_key(path: &str) -> String {
    let (prefix, leaf) = match path.rsplit_once('.') {
        Some((prefix, leaf)) => (Some(prefix), leaf),
        None => (None, path),
    };
    let leaf = match leaf {
        "gamma" => "weight",
        "beta" => "bias",
        other => other,
    };
    match prefix {
        Some(prefix) => format!("{prefix}.{leaf}"),
        None => leaf.to_string(),
    }
}

/// Tracks the module path while Burn's visitor walks the module tree.
struct PathCollector {
    stack: Vec<String>,
    tensors: Vec<NamedTensor>,
}

impl<B: Backend> ModuleVisitor<B> for PathCollector {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let trainable = self
            .stack
            .last()
            .is_none_or(|leaf| !RUNNING_STAT_NAMES.contains(&leaf.as_str()));
        self.tensors.push(NamedTensor {
            path: self.stack.join("."),
            shape: param.lazy_shape().to_vec(),
            trainable,
        });
    }
}
