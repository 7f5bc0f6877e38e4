//! Host side of the multi-tensor optimizer kernels: checks, chunking by the device's binding
//! limit, output allocation and launches on Burn's CubeCL primitive ([`CubeTensor`]).

use burn::cubecl::prelude::SequenceArg;
use burn::cubecl::{CubeCount, CubeDim};
use burn::tensor::DType;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::counters;
use super::group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};
use super::kernel::{
    adam_multi_tensor_kernel, sgd_momentum_multi_tensor_kernel, sgd_multi_tensor_kernel,
};

/// The scalars of an Adam step, each computed in f64 and rounded once to f32, as PyTorch
/// computes them in Python floats: `1 − beta2` taken in f32 from an f32 `beta2 = 0.999` is off
/// by 1.3e-5 relative, which would bias every second moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamScalars {
    /// `beta1`.
    pub beta1: f32,
    /// `1 − beta1`.
    pub one_minus_beta1: f32,
    /// `beta2`.
    pub beta2: f32,
    /// `1 − beta2`.
    pub one_minus_beta2: f32,
    /// `eps`.
    pub eps: f32,
    /// The factor on the parameter: `1 − lr·wd` (AdamW), else 1.
    pub param_scale: f32,
    /// The factor of the parameter added to the gradient: `wd` (Adam), else 0.
    pub grad_decay: f32,
}

impl AdamScalars {
    /// The scalars of `hyper`.
    pub fn new(hyper: &AdamHyper) -> Self {
        let (param_scale, grad_decay) = if hyper.decoupled {
            (1.0 - hyper.lr * hyper.weight_decay, 0.0)
        } else {
            (1.0, hyper.weight_decay)
        };
        Self {
            beta1: hyper.beta1 as f32,
            one_minus_beta1: (1.0 - hyper.beta1) as f32,
            beta2: hyper.beta2 as f32,
            one_minus_beta2: (1.0 - hyper.beta2) as f32,
            eps: hyper.eps as f32,
            param_scale: param_scale as f32,
            grad_decay: grad_decay as f32,
        }
    }
}

/// Units per cube.
const CUBE_SIZE: u32 = 256;
/// Most cubes of one launch: 64K cubes of 256 units cover 16M elements per sweep, enough to
/// fill any GPU; larger tensors take a few turns of the grid-stride loop.
const MAX_CUBES: usize = 65_535;
/// Most tensors of one launch. Each length is compiled once; 24 bounds the kernel's size (its
/// loops are unrolled per tensor) while making a few hundred parameters a dozen launches.
const MAX_CHUNK: usize = 24;

/// Tensors per launch for a kernel binding `per_tensor` tensors per parameter plus `shared`
/// others, within the device's binding limit (at least 1).
fn chunk_len<R: CubeRuntime>(tensor: &CubeTensor<R>, per_tensor: usize, shared: usize) -> usize {
    let bindings = tensor.client.properties().hardware.max_bindings as usize;
    (bindings.saturating_sub(shared) / per_tensor).clamp(1, MAX_CHUNK)
}

/// Enough cubes that every unit has a vector of the largest tensor of a chunk, within
/// [`MAX_CUBES`].
fn cube_count(largest_vectors: usize) -> CubeCount {
    let cubes = largest_vectors
        .div_ceil(CUBE_SIZE as usize)
        .clamp(1, MAX_CUBES);
    CubeCount::Static(cubes as u32, 1, 1)
}

/// The vector size of one launch over `params` (every other tensor of the launch has their
/// lengths) and its grid: the widest vector the device loads efficiently for their dtype that
/// divides every length (1 when none does), and enough cubes for the largest tensor's vectors
/// (at most [`MAX_CUBES`]; the grid-stride loops cover the rest).
fn vectors_and_grid<R: CubeRuntime>(params: &[CubeTensor<R>]) -> (usize, CubeCount) {
    let head = &params[0];
    let lengths = || params.iter().map(|p| p.meta.num_elements());
    let vector = head
        .client
        .io_optimized_vector_sizes(head.dtype.size())
        .find(|&n| lengths().all(|len| len % n == 0))
        .unwrap_or(1);
    let largest = lengths().max().unwrap_or(0);
    (vector, cube_count(largest / vector))
}

/// A contiguous copy of `tensor` when it is strided (none when it already is contiguous).
fn contiguous<R: CubeRuntime>(tensor: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous(tensor)
}

/// A new contiguous tensor shaped and typed like `like`.
fn empty_like<R: CubeRuntime>(like: &CubeTensor<R>) -> CubeTensor<R> {
    empty_device_contiguous_dtype(
        like.client.clone(),
        like.device.clone(),
        like.meta.shape().clone(),
        like.dtype,
    )
}

/// Panics unless every tensor of `others` has the shape and dtype of `params[i]`.
fn check_like<R: CubeRuntime>(
    what: &str,
    name: &str,
    params: &[CubeTensor<R>],
    others: &[CubeTensor<R>],
) {
    for (i, (p, o)) in params.iter().zip(others).enumerate() {
        assert!(
            p.meta.shape() == o.meta.shape() && p.dtype == o.dtype,
            "{what}: {name}[{i}] is {:?} {:?} but params[{i}] is {:?} {:?}",
            o.dtype,
            o.meta.shape(),
            p.dtype,
            p.meta.shape()
        );
    }
}

/// Panics unless `flags` is f32 `[n]`.
fn check_flags<R: CubeRuntime>(what: &str, name: &str, flags: &CubeTensor<R>, n: usize) {
    assert!(
        flags.dtype == DType::F32 && flags.meta.shape().as_slice() == [n],
        "{what}: {name} must be f32 [{n}], got {:?} {:?}",
        flags.dtype,
        flags.meta.shape()
    );
}

/// `found_inf` as the kernel reads it: the flag, or any f32 tensor (never read) and `false`.
fn found_inf_arg<R: CubeRuntime>(
    found_inf: Option<CubeTensor<R>>,
    placeholder: &CubeTensor<R>,
) -> (CubeTensor<R>, bool) {
    match found_inf {
        Some(flag) => {
            assert!(
                flag.dtype == DType::F32 && flag.meta.num_elements() == 1,
                "found_inf must be f32 [1], got {:?} {:?}",
                flag.dtype,
                flag.meta.shape()
            );
            (contiguous(flag), true)
        }
        None => (placeholder.clone(), false),
    }
}

/// The tensors' kernel arguments, as one sequence.
fn sequence<
    R: CubeRuntime,
    T: burn::cubecl::prelude::LaunchArg<RuntimeArg<R> = burn::cubecl::prelude::TensorArg<R>>,
>(
    tensors: &[CubeTensor<R>],
) -> SequenceArg<R, T> {
    tensors
        .iter()
        .map(|t| t.clone().into_tensor_arg())
        .collect()
}

/// Every tensor contiguous (copies only the strided ones).
fn contiguous_all<R: CubeRuntime>(tensors: Vec<CubeTensor<R>>) -> Vec<CubeTensor<R>> {
    tensors.into_iter().map(contiguous).collect()
}

/// Multi-tensor Adam/AdamW step on CubeCL tensors (see [`AdamGroup`] for the update and the
/// shapes); returns new tensors (the inputs are left untouched). Launches one kernel per
/// chunk of up to [`MAX_CHUNK`] tensors (fewer where the device binds fewer buffers).
pub fn multi_tensor_adam_cube<R, F, I, BT>(
    group: AdamGroup<CubeBackend<R, F, I, BT>>,
    hyper: AdamHyper,
    found_inf: Option<CubeTensor<R>>,
) -> AdamUpdate<CubeBackend<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    const WHAT: &str = "multi_tensor_adam";
    let n = group.len();
    let params = contiguous_all(group.params);
    let grads = contiguous_all(group.grads);
    let exp_avg = contiguous_all(group.exp_avg);
    let exp_avg_sq = contiguous_all(group.exp_avg_sq);
    check_like(WHAT, "grads", &params, &grads);
    check_like(WHAT, "exp_avg", &params, &exp_avg);
    check_like(WHAT, "exp_avg_sq", &params, &exp_avg_sq);
    check_flags(WHAT, "step_size", &group.step_size, n);
    check_flags(WHAT, "bc2_sqrt", &group.bc2_sqrt, n);
    let update = AdamUpdate {
        params: params.iter().map(empty_like).collect(),
        exp_avg: exp_avg.iter().map(empty_like).collect(),
        exp_avg_sq: exp_avg_sq.iter().map(empty_like).collect(),
    };
    let Some(first) = params.first() else {
        return update;
    };
    let step_size = contiguous(group.step_size);
    let bc2_sqrt = contiguous(group.bc2_sqrt);
    let (found_inf, has_found_inf) = found_inf_arg(found_inf, &step_size);
    // Seven tensors per parameter, plus step_size, bc2_sqrt, found_inf and the runtime's own.
    let chunk = chunk_len(first, 7, 4);
    let client = first.client.clone();
    let dtype = first.dtype;
    let scalars = AdamScalars::new(&hyper);
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let (vector, cubes) = vectors_and_grid(&params[start..end]);
        adam_multi_tensor_kernel::launch::<R>(
            &client,
            cubes,
            CubeDim::new_1d(CUBE_SIZE),
            vector,
            sequence(&params[start..end]),
            sequence(&grads[start..end]),
            sequence(&exp_avg[start..end]),
            sequence(&exp_avg_sq[start..end]),
            step_size.clone().into_tensor_arg(),
            bc2_sqrt.clone().into_tensor_arg(),
            found_inf.clone().into_tensor_arg(),
            sequence(&update.params[start..end]),
            sequence(&update.exp_avg[start..end]),
            sequence(&update.exp_avg_sq[start..end]),
            start as u32,
            scalars.beta1,
            scalars.one_minus_beta1,
            scalars.beta2,
            scalars.one_minus_beta2,
            scalars.eps,
            scalars.param_scale,
            scalars.grad_decay,
            has_found_inf,
            dtype.into(),
        );
        counters::ADAM_LAUNCHES.bump();
    }
    update
}

/// Multi-tensor SGD step (with or without momentum) on CubeCL tensors (see [`SgdGroup`] for
/// the update and the shapes); returns new tensors. One kernel per chunk, as
/// [`multi_tensor_adam_cube`].
pub fn multi_tensor_sgd_cube<R, F, I, BT>(
    group: SgdGroup<CubeBackend<R, F, I, BT>>,
    hyper: SgdHyper,
    found_inf: Option<CubeTensor<R>>,
) -> SgdUpdate<CubeBackend<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    const WHAT: &str = "multi_tensor_sgd";
    let n = group.len();
    let params = contiguous_all(group.params);
    let grads = contiguous_all(group.grads);
    let buffers = contiguous_all(group.momentum_buffer);
    check_like(WHAT, "grads", &params, &grads);
    let momentum = !buffers.is_empty();
    let update = SgdUpdate {
        params: params.iter().map(empty_like).collect(),
        momentum_buffer: buffers.iter().map(empty_like).collect(),
    };
    let Some(head) = params.first() else {
        return update;
    };
    let client = head.client.clone();
    let dtype = head.dtype;
    if momentum {
        check_like(WHAT, "momentum_buffer", &params, &buffers);
        let first = group
            .first
            .expect("multi_tensor_sgd: momentum buffers need the `first` flags");
        check_flags(WHAT, "first", &first, n);
        let first = contiguous(first);
        let (found_inf, has_found_inf) = found_inf_arg(found_inf, &first);
        // Five tensors per parameter, plus first, found_inf and the runtime's own.
        let chunk = chunk_len(head, 5, 3);
        for start in (0..n).step_by(chunk) {
            let end = (start + chunk).min(n);
            let (vector, cubes) = vectors_and_grid(&params[start..end]);
            sgd_momentum_multi_tensor_kernel::launch::<R>(
                &client,
                cubes,
                CubeDim::new_1d(CUBE_SIZE),
                vector,
                sequence(&params[start..end]),
                sequence(&grads[start..end]),
                sequence(&buffers[start..end]),
                first.clone().into_tensor_arg(),
                found_inf.clone().into_tensor_arg(),
                sequence(&update.params[start..end]),
                sequence(&update.momentum_buffer[start..end]),
                start as u32,
                hyper.lr as f32,
                hyper.momentum as f32,
                // In f64 first, for the reason of `AdamScalars`.
                (1.0 - hyper.dampening) as f32,
                hyper.weight_decay as f32,
                hyper.nesterov,
                has_found_inf,
                dtype.into(),
            );
            counters::SGD_LAUNCHES.bump();
        }
    } else {
        // Without a flag the kernel binds an unread f32 [1].
        let placeholder = empty_device_contiguous_dtype(
            client.clone(),
            head.device.clone(),
            burn::tensor::Shape::new([1]),
            DType::F32,
        );
        let (found_inf, has_found_inf) = found_inf_arg(found_inf, &placeholder);
        // Three tensors per parameter, plus found_inf and the runtime's own.
        let chunk = chunk_len(head, 3, 2);
        for start in (0..n).step_by(chunk) {
            let end = (start + chunk).min(n);
            let (vector, cubes) = vectors_and_grid(&params[start..end]);
            sgd_multi_tensor_kernel::launch::<R>(
                &client,
                cubes,
                CubeDim::new_1d(CUBE_SIZE),
                vector,
                sequence(&params[start..end]),
                sequence(&grads[start..end]),
                found_inf.clone().into_tensor_arg(),
                sequence(&update.params[start..end]),
                hyper.lr as f32,
                hyper.weight_decay as f32,
                has_found_inf,
                dtype.into(),
            );
            counters::SGD_LAUNCHES.bump();
        }
    }
    update
}
