//! A fused element-wise chain as a small register program, evaluated one tile of output
//! elements at a time.
//!
//! Registers hold `TILE` f32 values each: first one per input tensor (gathered from its
//! buffer, broadcast or strided), then one per op in the order the ops ran. Boolean values
//! (comparisons, masks) are 1.0 and 0.0. Each op is one loop over a tile, which the compiler
//! vectorises; a tile of every register stays in the first cache levels, so a chain of `k` ops
//! reads its inputs and writes its outputs once instead of `k` times.
//!
//! Every op computes exactly what Flex computes for it alone (the same f32 operation on the
//! same values), so a fused chain is bit-identical to the same ops run one by one.

use serde::{Deserialize, Serialize};

/// Output elements per tile: each register is one tile (4 KiB of f32).
pub const TILE: usize = 1024;

/// A register index.
pub type Reg = usize;

/// A scalar operand: its position in the runtime scalars of the fused ops (Burn's fusion
/// stream passes scalar values at execution, so one cached program serves every value).
pub type ScalarSlot = usize;

/// The arithmetic of a binary op, on tensors or with a scalar right-hand side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a − b`
    Sub,
    /// `a · b`
    Mul,
    /// `a / b`
    Div,
    /// `a < b` as 1.0 / 0.0
    Lower,
    /// `a ≤ b`
    LowerEqual,
    /// `a > b`
    Greater,
    /// `a ≥ b`
    GreaterEqual,
    /// `a = b`
    Equal,
}

/// A unary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unary {
    /// `eˣ`
    Exp,
    /// `ln x`
    Log,
    /// `√x`
    Sqrt,
    /// `1 / x`
    Recip,
    /// `|x|`
    Abs,
    /// `tanh x`
    Tanh,
}

/// One op of a program; `out` is always a register after every register it reads. The fields
/// are registers, except `op` and the scalar slots (`rhs` of `BinaryScalar`, `exponent`,
/// `value` of `MaskFill`).
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Instr {
    /// `out = lhs op rhs`.
    Binary {
        op: Binary,
        lhs: Reg,
        rhs: Reg,
        out: Reg,
    },
    /// `out = lhs op scalar`.
    BinaryScalar {
        op: Binary,
        lhs: Reg,
        rhs: ScalarSlot,
        out: Reg,
    },
    /// `out = op(input)`.
    Unary { op: Unary, input: Reg, out: Reg },
    /// `out = input^n` with the integer exponent `n` a scalar (Flex: `x · x` for 2).
    PowiScalar {
        input: Reg,
        exponent: ScalarSlot,
        out: Reg,
    },
    /// `out = mask ? value : tensor` with `value` a scalar (`mask_fill`).
    MaskFill {
        tensor: Reg,
        mask: Reg,
        value: ScalarSlot,
        out: Reg,
    },
    /// `out = mask ? value : tensor` with `value` a tensor (`mask_where`).
    MaskWhere {
        tensor: Reg,
        mask: Reg,
        value: Reg,
        out: Reg,
    },
}

impl Instr {
    /// The register the op writes.
    pub fn out(&self) -> Reg {
        match *self {
            Instr::Binary { out, .. }
            | Instr::BinaryScalar { out, .. }
            | Instr::Unary { out, .. }
            | Instr::PowiScalar { out, .. }
            | Instr::MaskFill { out, .. }
            | Instr::MaskWhere { out, .. } => out,
        }
    }
}

impl Binary {
    #[inline(always)]
    fn apply(self, a: f32, b: f32) -> f32 {
        let flag = |c: bool| if c { 1.0 } else { 0.0 };
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Lower => flag(a < b),
            Binary::LowerEqual => flag(a <= b),
            Binary::Greater => flag(a > b),
            Binary::GreaterEqual => flag(a >= b),
            Binary::Equal => flag(a == b),
        }
    }
}

impl Unary {
    #[inline(always)]
    fn apply(self, x: f32) -> f32 {
        match self {
            Unary::Exp => x.exp(),
            Unary::Log => x.ln(),
            Unary::Sqrt => x.sqrt(),
            Unary::Recip => 1.0 / x,
            Unary::Abs => x.abs(),
            Unary::Tanh => x.tanh(),
        }
    }
}

/// Runs `instrs` on one tile: `regs` holds `TILE` values per register (the inputs' already
/// gathered), `len ≤ TILE` of them valid; `scalars` are the runtime scalar values.
pub fn run_tile(instrs: &[Instr], regs: &mut [f32], len: usize, scalars: &[f32]) {
    for instr in instrs {
        let (read, write) = regs.split_at_mut(instr.out() * TILE);
        let out = &mut write[..len];
        let reg = |r: Reg| &read[r * TILE..r * TILE + len];
        match *instr {
            Instr::Binary { op, lhs, rhs, .. } => binary(op, reg(lhs), reg(rhs), out),
            Instr::BinaryScalar { op, lhs, rhs, .. } => {
                binary_scalar(op, reg(lhs), scalars[rhs], out)
            }
            Instr::Unary { op, input, .. } => unary(op, reg(input), out),
            Instr::PowiScalar {
                input, exponent, ..
            } => powi(reg(input), scalars[exponent] as i32, out),
            Instr::MaskFill {
                tensor,
                mask,
                value,
                ..
            } => {
                let value = scalars[value];
                for ((o, &t), &m) in out.iter_mut().zip(reg(tensor)).zip(reg(mask)) {
                    *o = if m != 0.0 { value } else { t };
                }
            }
            Instr::MaskWhere {
                tensor,
                mask,
                value,
                ..
            } => {
                for (((o, &t), &m), &v) in out
                    .iter_mut()
                    .zip(reg(tensor))
                    .zip(reg(mask))
                    .zip(reg(value))
                {
                    *o = if m != 0.0 { v } else { t };
                }
            }
        }
    }
}

/// `$body` inside a `match` on the binary op `$op`, with `$k` a constant of the matched
/// variant: one loop per op (the `match` outside it), so that each loop vectorises.
macro_rules! per_binary_op {
    ($op:expr, $k:ident => $body:expr) => {
        per_binary_op!(@arms $op, $k, $body,
            Add, Sub, Mul, Div, Lower, LowerEqual, Greater, GreaterEqual, Equal)
    };
    (@arms $op:expr, $k:ident, $body:expr, $($variant:ident),*) => {
        match $op {
            $(Binary::$variant => {
                const $k: Binary = Binary::$variant;
                $body
            })*
        }
    };
}

fn binary(op: Binary, a: &[f32], b: &[f32], out: &mut [f32]) {
    per_binary_op!(op, OP => {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = OP.apply(x, y);
        }
    })
}

fn binary_scalar(op: Binary, a: &[f32], y: f32, out: &mut [f32]) {
    per_binary_op!(op, OP => {
        for (o, &x) in out.iter_mut().zip(a) {
            *o = OP.apply(x, y);
        }
    })
}

fn unary(op: Unary, a: &[f32], out: &mut [f32]) {
    macro_rules! each {
        ($($op:ident),*) => {
            match op {
                $(Unary::$op => {
                    for (o, &x) in out.iter_mut().zip(a) {
                        *o = Unary::$op.apply(x);
                    }
                })*
            }
        };
    }
    each!(Exp, Log, Sqrt, Recip, Abs, Tanh)
}

/// Flex's `powi_scalar`: 1 for 0, `x` for 1, `x · x` for 2, `1 / x` for −1, `1 / (x · x)` for
/// −2, `powf` otherwise.
fn powi(a: &[f32], n: i32, out: &mut [f32]) {
    match n {
        0 => out.fill(1.0),
        1 => out.copy_from_slice(a),
        2 => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = x * x;
            }
        }
        -1 => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = 1.0 / x;
            }
        }
        -2 => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = 1.0 / (x * x);
            }
        }
        _ => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = x.powf(n as f32);
            }
        }
    }
}
