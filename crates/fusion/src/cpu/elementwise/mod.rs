//! Element-wise fusion on the CPU: chains of element-wise ops in Burn's fusion stream run as
//! one multi-threaded pass over memory, without the intermediate tensors.
//!
//! [`ElementwiseFuser`] recognises the chains (which ops, which shapes: `fuser`),
//! [`ElementwiseProgram`] is what it builds (a register program, `program`), and
//! [`ElementwiseOptimization`] runs it on the stream's tensors (`execute`).
//!
//! Example: batch norm's `(x − mean) / std · γ + β` followed by ReLU is five ops and a
//! comparison over `[N, C, H, W]`, with `mean`, `std`, `γ`, `β` of shape `[1, C, 1, 1]`; unfused,
//! each op reads and writes a full tensor; fused, one pass reads `x` and writes the result.

mod execute;
mod fuser;
mod program;

pub use fuser::ElementwiseFuser;
pub use program::{Binary, Instr, Reg, TILE, Unary};

use burn::backend::ir::{TensorId, TensorIr};
use serde::{Deserialize, Serialize};

/// A tensor the program reads: its register holds the tensor's values, gathered per tile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramInput {
    /// The tensor (relative ids and shape, as the fuser saw it).
    pub tensor: TensorIr,
    /// Its register.
    pub reg: Reg,
}

/// A tensor the program writes to memory (it outlives the chain).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramOutput {
    /// The tensor (relative ids and shape).
    pub tensor: TensorIr,
    /// The register holding its values.
    pub reg: Reg,
}

/// A fused element-wise chain, in the relative ids of the fusion stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementwiseProgram {
    /// Stream ops the program stands for (drops included).
    pub num_ops: usize,
    /// Registers: one per input, one per op.
    pub num_regs: usize,
    /// The ops, in stream order.
    pub instrs: Vec<Instr>,
    /// Tensors read, each in its own register.
    pub inputs: Vec<ProgramInput>,
    /// Tensors written; all have the chain's shape.
    pub outputs: Vec<ProgramOutput>,
    /// Tensors whose handles the chain releases: inputs it consumed or dropped, and the
    /// tensors it created and consumed (never written).
    pub released: Vec<TensorId>,
    /// The stream's scalar id of each scalar slot.
    pub scalars: Vec<u64>,
    /// A tensor of the chain's shape (the first op's output), whose size at execution is the
    /// pass's.
    pub reference: TensorId,
}

/// The optimization Burn's stream executes for a fused chain.
#[derive(Debug)]
pub struct ElementwiseOptimization {
    program: ElementwiseProgram,
}

impl ElementwiseOptimization {
    /// The optimization running `program`.
    pub fn new(program: ElementwiseProgram) -> Self {
        Self { program }
    }

    /// The program it runs.
    pub fn program(&self) -> &ElementwiseProgram {
        &self.program
    }
}
