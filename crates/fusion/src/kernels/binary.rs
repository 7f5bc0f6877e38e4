//! Element-wise binary ops on f32 operands that broadcast or are strided views, as one
//! multi-threaded pass of contiguous or broadcast rows ([`StridedPlan`]).

use super::strided::{StridedPlan, broadcast_shape};
use burn::backend::flex::{FlexTensor, Layout};
use burn::tensor::{Bytes, DType, Shape};

/// The arithmetic of a binary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a − b`
    Sub,
    /// `a · b`
    Mul,
    /// `a / b`
    Div,
}

impl BinaryOp {
    /// The op on one pair of values.
    #[inline(always)]
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
        }
    }
}

/// Whether [`binary_f32`] is the better kernel for `lhs op rhs`: both f32, of one rank, and at
/// least one broadcast or strided (Flex's own kernels handle contiguous operands of one shape
/// with SIMD, in place when they can).
pub fn takes(lhs: &FlexTensor, rhs: &FlexTensor) -> bool {
    lhs.dtype() == DType::F32
        && rhs.dtype() == DType::F32
        && lhs.layout().num_dims() == rhs.layout().num_dims()
        && !(lhs.layout().shape() == rhs.layout().shape()
            && lhs.layout().is_contiguous()
            && rhs.layout().is_contiguous())
        && broadcast_shape(lhs.layout().shape(), rhs.layout().shape()).is_some()
}

/// `lhs op rhs` with broadcasting, a new contiguous f32 tensor of the broadcast shape.
///
/// lhs, rhs: f32 of one rank, broadcastable (size 1 or equal per dimension), any strides.
pub fn binary_f32(lhs: &FlexTensor, rhs: &FlexTensor, op: BinaryOp) -> FlexTensor {
    let shape = broadcast_shape(lhs.layout().shape(), rhs.layout().shape())
        .expect("binary_f32: operands must broadcast");
    let plan = StridedPlan::new(&shape, [lhs.layout(), rhs.layout()]);
    let (a, b): (&[f32], &[f32]) = (lhs.storage(), rhs.storage());
    let mut out = vec![0f32; shape.iter().product()];
    match op {
        BinaryOp::Add => rows::<Add>(&plan, a, b, &mut out),
        BinaryOp::Sub => rows::<Sub>(&plan, a, b, &mut out),
        BinaryOp::Mul => rows::<Mul>(&plan, a, b, &mut out),
        BinaryOp::Div => rows::<Div>(&plan, a, b, &mut out),
    }
    let shape = Shape::from(shape);
    FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(shape),
        DType::F32,
    )
}

/// One binary op as a type, so that each row loop is compiled (and vectorised) per op.
trait Arith {
    fn apply(a: f32, b: f32) -> f32;
}

macro_rules! arith {
    ($name:ident, $a:ident, $b:ident => $e:expr) => {
        struct $name;
        impl Arith for $name {
            #[inline(always)]
            fn apply($a: f32, $b: f32) -> f32 {
                $e
            }
        }
    };
}

arith!(Add, a, b => a + b);
arith!(Sub, a, b => a - b);
arith!(Mul, a, b => a * b);
arith!(Div, a, b => a / b);

/// Every row of `plan`: contiguous runs, broadcast scalars, or (rarely) strided rows.
fn rows<O: Arith>(plan: &StridedPlan<2>, a: &[f32], b: &[f32], out: &mut [f32]) {
    let [sa, sb] = plan.row_strides();
    plan.for_each_row(out, |row, [oa, ob]| {
        let n = row.len();
        match (sa, sb) {
            (1, 1) => {
                for ((o, &x), &y) in row.iter_mut().zip(&a[oa..oa + n]).zip(&b[ob..ob + n]) {
                    *o = O::apply(x, y);
                }
            }
            (1, 0) => {
                let y = b[ob];
                for (o, &x) in row.iter_mut().zip(&a[oa..oa + n]) {
                    *o = O::apply(x, y);
                }
            }
            (0, 1) => {
                let x = a[oa];
                for (o, &y) in row.iter_mut().zip(&b[ob..ob + n]) {
                    *o = O::apply(x, y);
                }
            }
            _ => {
                for (j, o) in row.iter_mut().enumerate() {
                    let x = a[(oa as isize + j as isize * sa) as usize];
                    let y = b[(ob as isize + j as isize * sb) as usize];
                    *o = O::apply(x, y);
                }
            }
        }
    });
}
