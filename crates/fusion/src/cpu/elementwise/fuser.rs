//! The element-wise fuser: accepts Burn IR ops while they form one chain of element-wise ops
//! over one output shape, and builds the [`ElementwiseProgram`] that runs them as one pass.
//!
//! What it accepts (f32 tensors; booleans for comparisons and masks):
//! - add, sub, mul, div of two tensors or of a tensor and a scalar; the tensors may broadcast
//!   (size 1 on a dimension) to the chain's shape;
//! - comparisons of two tensors or with a scalar, `mask_fill`, `mask_where` (Burn's ReLU and
//!   its gradient are a comparison and a `mask_fill`);
//! - exp, log, sqrt, recip, abs, tanh, `powi_scalar`;
//! - drops of tensors the chain reads or creates.
//!
//! The fuser sees the stream's ops in *relative* form: tensor ids and dimension sizes are
//! numbered in order of appearance, size 1 is always dimension id 0, and scalars are slots
//! filled at execution. Two dims with one id have one size, so "broadcasts to the chain's
//! shape" is decided here, and the program serves every later graph with the same relative
//! form.
//!
//! A tensor the chain creates is written to memory only if it outlives the chain: when no op
//! of the chain consumed it (read it with status `ReadWrite`, its last use) and the chain did
//! not drop it.

use super::program::{Binary, Instr, Reg, Unary};
use super::{ElementwiseProgram, ProgramInput, ProgramOutput};
use crate::cpu::CpuOptimization;
use burn::backend::ir::{
    BaseOperationIr, BinaryOpIr, FloatOperationIr, NumericOperationIr, OperationIr, ScalarIr,
    ScalarOpIr, TensorId, TensorIr, TensorStatus, UnaryOpIr,
};
use burn::tensor::{BoolStore, DType, Shape};
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use std::collections::{HashMap, HashSet};

/// Fewest computing ops worth a fused pass: one op alone runs as well unfused.
const MIN_FUSED_OPS: usize = 2;

/// Builds element-wise programs from the fusion stream (see the module doc).
#[derive(Clone, Debug)]
pub struct ElementwiseFuser {
    status: FuserStatus,
    /// The chain's output shape (relative), set by its first op.
    shape: Option<Shape>,
    /// Ops accepted, drops included.
    num_ops: usize,
    instrs: Vec<Instr>,
    inputs: Vec<ProgramInput>,
    /// Created tensors in order, with their register.
    created: Vec<(TensorIr, Reg)>,
    /// Register of every tensor read or created so far (relative id), numbered in order: its
    /// length is the number of registers.
    regs: HashMap<TensorId, Reg>,
    /// Tensors consumed (read `ReadWrite`) or dropped by the chain.
    freed: HashSet<TensorId>,
    scalars: Vec<u64>,
}

impl Default for ElementwiseFuser {
    fn default() -> Self {
        Self {
            status: FuserStatus::Open,
            shape: None,
            num_ops: 0,
            instrs: Vec::new(),
            inputs: Vec::new(),
            created: Vec::new(),
            regs: HashMap::new(),
            freed: HashSet::new(),
            scalars: Vec::new(),
        }
    }
}

/// Whether a tensor of `dtype` is a value the program holds: f32, or a one-byte boolean.
fn supported(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::F32 | DType::Bool(BoolStore::Native) | DType::Bool(BoolStore::U8)
    )
}

impl ElementwiseFuser {
    /// The instruction for `op`, registering its operands, or `None` when the chain cannot
    /// take it (then nothing was registered).
    fn accept(&mut self, op: &OperationIr) -> Option<()> {
        match op {
            OperationIr::NumericFloat(DType::F32, op) => self.numeric(op),
            OperationIr::Float(DType::F32, op) => self.float(op),
            OperationIr::BaseFloat(op) => self.base(op),
            OperationIr::Drop(tensor) => self.drop_tensor(tensor),
            _ => None,
        }
    }

    fn numeric(&mut self, op: &NumericOperationIr) -> Option<()> {
        use NumericOperationIr as N;
        match op {
            N::Add(b) => self.binary(Binary::Add, b),
            N::Sub(b) => self.binary(Binary::Sub, b),
            N::Mul(b) => self.binary(Binary::Mul, b),
            N::Div(b) => self.binary(Binary::Div, b),
            N::Lower(b) => self.binary(Binary::Lower, b),
            N::LowerEqual(b) => self.binary(Binary::LowerEqual, b),
            N::Greater(b) => self.binary(Binary::Greater, b),
            N::GreaterEqual(b) => self.binary(Binary::GreaterEqual, b),
            N::AddScalar(s) => self.binary_scalar(Binary::Add, s),
            N::SubScalar(s) => self.binary_scalar(Binary::Sub, s),
            N::MulScalar(s) => self.binary_scalar(Binary::Mul, s),
            N::DivScalar(s) => self.binary_scalar(Binary::Div, s),
            N::LowerElem(s) => self.binary_scalar(Binary::Lower, s),
            N::LowerEqualElem(s) => self.binary_scalar(Binary::LowerEqual, s),
            N::GreaterElem(s) => self.binary_scalar(Binary::Greater, s),
            N::GreaterEqualElem(s) => self.binary_scalar(Binary::GreaterEqual, s),
            N::Abs(u) => self.unary(Unary::Abs, u),
            N::PowiScalar(s) => {
                self.check(&[&s.lhs], &s.out)?;
                let exponent = self.scalar(&s.rhs);
                let input = self.read(&s.lhs);
                let out = self.create(&s.out);
                self.instrs.push(Instr::PowiScalar {
                    input,
                    exponent,
                    out,
                });
                Some(())
            }
            _ => None,
        }
    }

    fn float(&mut self, op: &FloatOperationIr) -> Option<()> {
        use FloatOperationIr as F;
        match op {
            F::Exp(u) => self.unary(Unary::Exp, u),
            F::Log(u) => self.unary(Unary::Log, u),
            F::Sqrt(u) => self.unary(Unary::Sqrt, u),
            F::Recip(u) => self.unary(Unary::Recip, u),
            F::Tanh(u) => self.unary(Unary::Tanh, u),
            _ => None,
        }
    }

    fn base(&mut self, op: &BaseOperationIr) -> Option<()> {
        match op {
            BaseOperationIr::Equal(b) if b.lhs.dtype == DType::F32 => self.binary(Binary::Equal, b),
            BaseOperationIr::EqualElem(s) if s.lhs.dtype == DType::F32 => {
                self.binary_scalar(Binary::Equal, s)
            }
            BaseOperationIr::MaskFill(m) if m.tensor.dtype == DType::F32 => {
                self.check(&[&m.tensor, &m.mask], &m.out)?;
                let value = self.scalar(&m.value);
                let tensor = self.read(&m.tensor);
                let mask = self.read(&m.mask);
                let out = self.create(&m.out);
                self.instrs.push(Instr::MaskFill {
                    tensor,
                    mask,
                    value,
                    out,
                });
                Some(())
            }
            BaseOperationIr::MaskWhere(m) if m.tensor.dtype == DType::F32 => {
                self.check(&[&m.tensor, &m.mask, &m.value], &m.out)?;
                let tensor = self.read(&m.tensor);
                let mask = self.read(&m.mask);
                let value = self.read(&m.value);
                let out = self.create(&m.out);
                self.instrs.push(Instr::MaskWhere {
                    tensor,
                    mask,
                    value,
                    out,
                });
                Some(())
            }
            _ => None,
        }
    }

    fn binary(&mut self, op: Binary, b: &BinaryOpIr) -> Option<()> {
        self.check(&[&b.lhs, &b.rhs], &b.out)?;
        let lhs = self.read(&b.lhs);
        let rhs = self.read(&b.rhs);
        let out = self.create(&b.out);
        self.instrs.push(Instr::Binary { op, lhs, rhs, out });
        Some(())
    }

    fn binary_scalar(&mut self, op: Binary, s: &ScalarOpIr) -> Option<()> {
        self.check(&[&s.lhs], &s.out)?;
        let rhs = self.scalar(&s.rhs);
        let lhs = self.read(&s.lhs);
        let out = self.create(&s.out);
        self.instrs.push(Instr::BinaryScalar { op, lhs, rhs, out });
        Some(())
    }

    fn unary(&mut self, op: Unary, u: &UnaryOpIr) -> Option<()> {
        self.check(&[&u.input], &u.out)?;
        let input = self.read(&u.input);
        let out = self.create(&u.out);
        self.instrs.push(Instr::Unary { op, input, out });
        Some(())
    }

    /// A drop of a tensor the chain knows: an input's handle is released after the pass, a
    /// created tensor is not written.
    fn drop_tensor(&mut self, tensor: &TensorIr) -> Option<()> {
        if !self.regs.contains_key(&tensor.id) {
            return None;
        }
        self.freed.insert(tensor.id);
        Some(())
    }

    /// Whether an op reading `reads` and writing `out` fits the chain: supported dtypes, `out`
    /// of the chain's shape, every read broadcastable to it. Registers nothing but the chain's
    /// shape, which the first op sets.
    fn check(&mut self, reads: &[&TensorIr], out: &TensorIr) -> Option<()> {
        if !supported(out.dtype) || reads.iter().any(|t| !supported(t.dtype)) {
            return None;
        }
        let shape = self.shape.as_ref().unwrap_or(&out.shape);
        let broadcasts = |t: &TensorIr| {
            t.shape.rank() == shape.rank()
                // Dimension id 0 is size 1 (see the module doc).
                && t.shape.iter().zip(shape.iter()).all(|(d, s)| d == s || *d == 0)
        };
        // A tensor the chain created has the chain's shape; an input may broadcast.
        if out.shape != *shape || !reads.iter().all(|t| broadcasts(t)) {
            return None;
        }
        self.shape = Some(out.shape.clone());
        Some(())
    }

    /// The register of a read tensor: the chain's own, or a new input's.
    fn read(&mut self, tensor: &TensorIr) -> Reg {
        if tensor.status == TensorStatus::ReadWrite {
            self.freed.insert(tensor.id);
        }
        if let Some(&reg) = self.regs.get(&tensor.id) {
            return reg;
        }
        let reg = self.new_reg(tensor.id);
        self.inputs.push(ProgramInput {
            tensor: tensor.clone(),
            reg,
        });
        reg
    }

    fn create(&mut self, tensor: &TensorIr) -> Reg {
        let reg = self.new_reg(tensor.id);
        self.created.push((tensor.clone(), reg));
        reg
    }

    fn new_reg(&mut self, id: TensorId) -> Reg {
        let reg = self.regs.len();
        self.regs.insert(id, reg);
        reg
    }

    /// The slot of a scalar operand (relative scalars are `UInt(scalar id)`).
    fn scalar(&mut self, scalar: &ScalarIr) -> usize {
        let ScalarIr::UInt(id) = scalar else {
            unreachable!("relative scalars are ids, got {scalar:?}")
        };
        self.scalars.push(*id);
        self.scalars.len() - 1
    }

    /// The program of the ops accepted so far.
    pub fn program(&self) -> ElementwiseProgram {
        let outputs = self
            .created
            .iter()
            .filter(|(tensor, _)| !self.freed.contains(&tensor.id))
            .map(|(tensor, reg)| ProgramOutput {
                tensor: tensor.clone(),
                reg: *reg,
            })
            .collect();
        let mut released: Vec<TensorId> = self.freed.iter().copied().collect();
        released.sort();
        ElementwiseProgram {
            num_ops: self.num_ops,
            num_regs: self.regs.len(),
            instrs: self.instrs.clone(),
            inputs: self.inputs.clone(),
            outputs,
            released,
            scalars: self.scalars.clone(),
            reference: self.created[0].0.id,
        }
    }
}

impl OperationFuser<CpuOptimization> for ElementwiseFuser {
    fn fuse(&mut self, operation: &OperationIr) {
        if self.status == FuserStatus::Closed {
            return;
        }
        // Each op is checked before any of it is registered, so a refused op leaves no trace.
        match self.accept(operation) {
            Some(()) => self.num_ops += 1,
            None => self.status = FuserStatus::Closed,
        }
    }

    fn finish(&mut self) -> CpuOptimization {
        CpuOptimization::Elementwise(super::ElementwiseOptimization::new(self.program()))
    }

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        let ready = self.instrs.len() >= MIN_FUSED_OPS;
        FuserProperties {
            score: if ready { self.instrs.len() as u64 } else { 0 },
            ready,
        }
    }

    fn len(&self) -> usize {
        self.num_ops
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CpuOptimization>> {
        Box::new(self.clone())
    }
}
