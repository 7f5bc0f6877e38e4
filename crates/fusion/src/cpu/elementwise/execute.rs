//! Running an [`ElementwiseProgram`] on the fusion stream's tensors: gather each input tile
//! (broadcast or strided), run the ops on the tile, write the outputs; tiles spread over the
//! cores when the pass is large enough to pay for it.

use super::program::{TILE, run_tile};
use super::{ElementwiseOptimization, ElementwiseProgram};
use crate::counters::{ELEMENTWISE_FUSED, ELEMENTWISE_FUSED_OPS};
use crate::cpu::CpuFlex;
use crate::kernels::strided::{TASK_ELEMENTS, broadcast_strides, coalesce};
use burn::backend::flex::{FlexTensor, Layout};
use burn::backend::ir::{HandleKind, ScalarIr, TensorStatus};
use burn::tensor::{Bytes, DType, Shape};
use burn_fusion::stream::{Context, ScalarId};
use rayon::prelude::*;

impl ElementwiseOptimization {
    /// Runs the program: reads its inputs' handles, registers its outputs', releases the
    /// handles of the tensors it consumed.
    pub fn execute(&self, context: &mut Context<HandleKind<CpuFlex>>) {
        let program = &self.program;
        ELEMENTWISE_FUSED.bump();
        ELEMENTWISE_FUSED_OPS.add(program.instrs.len() as u64);
        let global = |id| {
            context
                .tensors
                .get(id)
                .unwrap_or_else(|| {
                    panic!("fused element-wise: tensor {id:?} is not in the context")
                })
                .clone()
        };
        let shape: Vec<usize> = global(&program.reference).shape.to_vec();
        let scalars: Vec<f32> = program
            .scalars
            .iter()
            .map(|&value| scalar(context.scalars.get(&ScalarId { value })))
            .collect();
        let inputs: Vec<FlexTensor> = program
            .inputs
            .iter()
            .map(|input| {
                let id = global(&input.tensor.id).id;
                match context.handles.get_handle(&id, &TensorStatus::ReadOnly) {
                    HandleKind::Float(t) | HandleKind::Bool(t) => t,
                    other => panic!("fused element-wise: input of kind {}", other.name()),
                }
            })
            .collect();

        let outputs = run(program, &shape, &inputs, &scalars);

        drop(inputs);
        for (output, tensor) in program.outputs.iter().zip(outputs) {
            let id = global(&output.tensor.id).id;
            let handle = match output.tensor.dtype {
                DType::F32 => HandleKind::Float(tensor),
                _ => HandleKind::Bool(tensor),
            };
            context.handles.register_handle(id, handle);
        }
        for id in &program.released {
            if let Some(tensor) = context.tensors.get(id) {
                context.handles.remove_handle(tensor.id);
            }
        }
    }
}

/// A runtime scalar as f32 (Flex converts scalars of f32 ops the same way).
fn scalar(value: Option<&ScalarIr>) -> f32 {
    match value {
        Some(ScalarIr::Float(v)) => *v as f32,
        Some(ScalarIr::Int(v)) => *v as f32,
        Some(ScalarIr::UInt(v)) => *v as f32,
        Some(ScalarIr::Bool(v)) => f32::from(u8::from(*v)),
        None => panic!("fused element-wise: a scalar is missing from the context"),
    }
}

/// The program's outputs for inputs of `shape` (or broadcasting to it), in its output order.
pub fn run(
    program: &ElementwiseProgram,
    shape: &[usize],
    inputs: &[FlexTensor],
    scalars: &[f32],
) -> Vec<FlexTensor> {
    let len: usize = shape.iter().product();
    if program.outputs.is_empty() {
        return Vec::new();
    }
    let gather = Gather::new(shape, inputs);
    let mut outputs: Vec<Output> = program
        .outputs
        .iter()
        .map(|o| Output::new(o.tensor.dtype, len))
        .collect();
    // One task on the calling thread for a small pass (waking the pool's workers would cost
    // more than they save); otherwise tasks of `TASK_ELEMENTS`, each owning its range of every
    // output.
    let per_task = if len < TASK_ELEMENTS {
        len.max(1)
    } else {
        TASK_ELEMENTS
    };
    let mut tasks: Vec<Vec<OutSlice<'_>>> = (0..len.div_ceil(per_task))
        .map(|_| Vec::with_capacity(outputs.len()))
        .collect();
    for output in outputs.iter_mut() {
        for (t, chunk) in output.chunks_mut(per_task).into_iter().enumerate() {
            tasks[t].push(chunk);
        }
    }
    let task = |t: usize, mut outs: Vec<OutSlice<'_>>, regs: &mut Vec<f32>| {
        regs.resize(program.num_regs * TILE, 0.0);
        let (first, last) = (t * per_task, ((t + 1) * per_task).min(len));
        let mut start = first;
        while start < last {
            let n = TILE.min(last - start);
            for (k, input) in program.inputs.iter().enumerate() {
                gather.fill(k, start, &mut regs[input.reg * TILE..input.reg * TILE + n]);
            }
            run_tile(&program.instrs, regs, n, scalars);
            for (output, out) in program.outputs.iter().zip(outs.iter_mut()) {
                out.write(
                    start - first,
                    &regs[output.reg * TILE..output.reg * TILE + n],
                );
            }
            start += n;
        }
    };
    if tasks.len() <= 1 {
        task(0, tasks.pop().unwrap_or_default(), &mut Vec::new());
    } else {
        tasks
            .into_par_iter()
            .enumerate()
            .for_each_init(Vec::new, |regs, (t, outs)| task(t, outs, regs));
    }
    let shape = Shape::from(shape.to_vec());
    outputs
        .into_iter()
        .map(|o| o.into_tensor(shape.clone()))
        .collect()
}

/// Reads the inputs at output positions: each operand's strides over the coalesced output
/// dimensions (0 where it broadcasts).
struct Gather<'a> {
    /// Coalesced output dimensions, outermost first; the last is the row.
    dims: Vec<usize>,
    /// `strides[k][d]` of input `k` on dimension `d`.
    strides: Vec<Vec<isize>>,
    offsets: Vec<isize>,
    data: Vec<Source<'a>>,
}

enum Source<'a> {
    F32(&'a [f32]),
    /// Booleans stored as bytes (0 or 1).
    Bool(&'a [u8]),
}

impl<'a> Gather<'a> {
    fn new(shape: &[usize], inputs: &'a [FlexTensor]) -> Self {
        let layouts: Vec<&Layout> = inputs.iter().map(|t| t.layout()).collect();
        let strides: Vec<Vec<isize>> = layouts
            .iter()
            .enumerate()
            .map(|(k, layout)| broadcast_strides(shape, layout, k))
            .collect();
        let merged = coalesce(shape, &strides);
        let dims = merged.iter().map(|(size, _)| *size).collect();
        let strides = (0..inputs.len())
            .map(|k| merged.iter().map(|(_, s)| s[k]).collect())
            .collect();
        let offsets = layouts.iter().map(|l| l.start_offset() as isize).collect();
        let data = inputs
            .iter()
            .map(|t| match t.dtype() {
                DType::F32 => Source::F32(t.storage()),
                DType::Bool(_) => Source::Bool(t.storage()),
                other => panic!("fused element-wise: input of dtype {other:?}"),
            })
            .collect();
        Self {
            dims,
            strides,
            offsets,
            data,
        }
    }

    /// `out[i]` = input `k` at output position `start + i`.
    fn fill(&self, k: usize, start: usize, out: &mut [f32]) {
        let strides = &self.strides[k];
        let Some(&row) = self.dims.last() else {
            // A scalar output: every input is one value.
            out.fill(self.value(k, self.offsets[k]));
            return;
        };
        let row_stride = *strides.last().unwrap_or(&0);
        let mut index = start;
        let mut filled = 0;
        while filled < out.len() {
            // Offset of `index`'s row start, and where in the row it is.
            let column = index % row;
            let mut rest = index / row;
            let mut offset = self.offsets[k];
            for d in (0..self.dims.len() - 1).rev() {
                offset += (rest % self.dims[d]) as isize * strides[d];
                rest /= self.dims[d];
            }
            offset += column as isize * row_stride;
            let n = (row - column).min(out.len() - filled);
            self.row(k, offset, row_stride, &mut out[filled..filled + n]);
            filled += n;
            index += n;
        }
    }

    fn row(&self, k: usize, offset: isize, stride: isize, out: &mut [f32]) {
        let at = |j: usize| (offset + j as isize * stride) as usize;
        match (&self.data[k], stride) {
            (Source::F32(d), 1) => {
                out.copy_from_slice(&d[offset as usize..offset as usize + out.len()])
            }
            (Source::F32(d), 0) => out.fill(d[offset as usize]),
            (Source::F32(d), _) => out.iter_mut().enumerate().for_each(|(j, o)| *o = d[at(j)]),
            (Source::Bool(d), _) => out
                .iter_mut()
                .enumerate()
                .for_each(|(j, o)| *o = f32::from(d[at(j)])),
        }
    }

    fn value(&self, k: usize, offset: isize) -> f32 {
        match &self.data[k] {
            Source::F32(d) => d[offset as usize],
            Source::Bool(d) => f32::from(d[offset as usize]),
        }
    }
}

/// An output buffer being written: f32 values, or booleans as bytes.
enum Output {
    F32(Vec<f32>),
    Bool(Vec<u8>, DType),
}

/// A task's range of one output.
enum OutSlice<'a> {
    F32(&'a mut [f32]),
    Bool(&'a mut [u8]),
}

impl OutSlice<'_> {
    /// Writes `values` from position `at` of the range.
    fn write(&mut self, at: usize, values: &[f32]) {
        match self {
            OutSlice::F32(s) => s[at..at + values.len()].copy_from_slice(values),
            OutSlice::Bool(s) => {
                for (o, &v) in s[at..at + values.len()].iter_mut().zip(values) {
                    *o = u8::from(v != 0.0);
                }
            }
        }
    }
}

impl Output {
    fn new(dtype: DType, len: usize) -> Self {
        // Zeroed rather than uninitialised: fresh pages come zeroed from the system anyway,
        // and the pass overwrites every element.
        match dtype {
            DType::F32 => Output::F32(vec![0.0; len]),
            _ => Output::Bool(vec![0; len], dtype),
        }
    }

    fn chunks_mut(&mut self, size: usize) -> Vec<OutSlice<'_>> {
        match self {
            Output::F32(v) => v.chunks_mut(size).map(OutSlice::F32).collect(),
            Output::Bool(v, _) => v.chunks_mut(size).map(OutSlice::Bool).collect(),
        }
    }

    fn into_tensor(self, shape: Shape) -> FlexTensor {
        let layout = Layout::contiguous(shape);
        match self {
            Output::F32(v) => FlexTensor::new(Bytes::from_elems(v), layout, DType::F32),
            Output::Bool(v, dtype) => FlexTensor::new(Bytes::from_elems(v), layout, dtype),
        }
    }
}
