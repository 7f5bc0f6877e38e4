//! The element-wise fuser on hand-built op sequences in the fusion stream's relative form
//! (dimension id 0 is size 1; scalars are ids): what it accepts, where it stops, which tensors
//! the program reads, writes and releases.

use burn::backend::ir::{
    BinaryOpIr, FloatOperationIr, MatmulOpIr, NumericOperationIr, OperationIr, ScalarIr,
    ScalarOpIr, TensorId, TensorIr, TensorStatus, UnaryOpIr,
};
use burn::tensor::{DType, Shape};
use burn_fusion::{FuserStatus, OperationFuser};
use burnacc_fusion::cpu::CpuOptimization;
use burnacc_fusion::cpu::elementwise::{Binary, ElementwiseFuser, Instr, Unary};

/// The relative shape `[N, C, H, W]`: dimension ids 1 to 4.
const FULL: [usize; 4] = [1, 2, 3, 4];
/// `[1, C, 1, 1]`.
const CHANNEL: [usize; 4] = [0, 2, 0, 0];

fn t(id: u64, shape: [usize; 4], status: TensorStatus) -> TensorIr {
    TensorIr {
        id: TensorId::new(id),
        shape: Shape::from(shape.to_vec()),
        status,
        dtype: DType::F32,
    }
}

fn read(id: u64, shape: [usize; 4]) -> TensorIr {
    t(id, shape, TensorStatus::ReadOnly)
}

fn last_read(id: u64, shape: [usize; 4]) -> TensorIr {
    t(id, shape, TensorStatus::ReadWrite)
}

fn new(id: u64, shape: [usize; 4]) -> TensorIr {
    t(id, shape, TensorStatus::NotInit)
}

fn mul(lhs: TensorIr, rhs: TensorIr, out: TensorIr) -> OperationIr {
    OperationIr::NumericFloat(
        DType::F32,
        NumericOperationIr::Mul(BinaryOpIr { lhs, rhs, out }),
    )
}

fn add_scalar(lhs: TensorIr, scalar: u64, out: TensorIr) -> OperationIr {
    let rhs = ScalarIr::UInt(scalar);
    OperationIr::NumericFloat(
        DType::F32,
        NumericOperationIr::AddScalar(ScalarOpIr { lhs, rhs, out }),
    )
}

fn exp(input: TensorIr, out: TensorIr) -> OperationIr {
    OperationIr::Float(DType::F32, FloatOperationIr::Exp(UnaryOpIr { input, out }))
}

fn fuse(ops: &[OperationIr]) -> ElementwiseFuser {
    let mut fuser = ElementwiseFuser::default();
    for op in ops {
        fuser.fuse(op);
    }
    fuser
}

#[test]
fn a_chain_reads_its_inputs_and_writes_only_what_outlives_it() {
    // t2 = x · s (s broadcast per channel); t3 = t2 + scalar 0; t4 = exp(t3). t2 and t3 are
    // consumed inside the chain; x is read for the last time; s stays alive.
    let fuser = fuse(&[
        mul(last_read(0, FULL), read(1, CHANNEL), new(2, FULL)),
        add_scalar(last_read(2, FULL), 0, new(3, FULL)),
        exp(last_read(3, FULL), new(4, FULL)),
    ]);
    assert_eq!(fuser.status(), FuserStatus::Open);
    assert_eq!(fuser.len(), 3);
    let properties = fuser.properties();
    assert!(properties.ready);
    assert_eq!(properties.score, 3);

    let program = fuser.program();
    let inputs: Vec<u64> = program.inputs.iter().map(|i| i.tensor.id.value()).collect();
    assert_eq!(inputs, [0, 1]);
    let outputs: Vec<u64> = program
        .outputs
        .iter()
        .map(|o| o.tensor.id.value())
        .collect();
    assert_eq!(outputs, [4], "only the chain's result outlives it");
    let released: Vec<u64> = program.released.iter().map(|id| id.value()).collect();
    assert_eq!(
        released,
        [0, 2, 3],
        "x's last read and the consumed intermediates"
    );
    assert_eq!(
        program.instrs,
        [
            Instr::Binary {
                op: Binary::Mul,
                lhs: 0,
                rhs: 1,
                out: 2
            },
            Instr::BinaryScalar {
                op: Binary::Add,
                lhs: 2,
                rhs: 0,
                out: 3
            },
            Instr::Unary {
                op: Unary::Exp,
                input: 3,
                out: 4
            },
        ]
    );
    assert_eq!(program.scalars, [0]);
    assert_eq!(program.reference, TensorId::new(2));
}

#[test]
fn a_tensor_still_read_after_the_chain_is_written() {
    // t2 is read only (not consumed) by the next op: it stays alive and is written.
    let fuser = fuse(&[
        mul(read(0, FULL), read(1, FULL), new(2, FULL)),
        exp(read(2, FULL), new(3, FULL)),
    ]);
    let outputs: Vec<u64> = fuser
        .program()
        .outputs
        .iter()
        .map(|o| o.tensor.id.value())
        .collect();
    assert_eq!(outputs, [2, 3]);
    assert!(fuser.program().released.is_empty());
}

#[test]
fn the_first_op_it_cannot_take_closes_it() {
    let matmul = OperationIr::Float(
        DType::F32,
        FloatOperationIr::Matmul(MatmulOpIr {
            lhs: read(3, FULL),
            rhs: read(0, FULL),
            out: new(4, FULL),
        }),
    );
    let fuser = fuse(&[
        mul(read(0, FULL), read(1, FULL), new(2, FULL)),
        exp(last_read(2, FULL), new(3, FULL)),
        matmul,
        // After closing, nothing more is taken, even a fusable op.
        exp(read(3, FULL), new(5, FULL)),
    ]);
    assert_eq!(fuser.status(), FuserStatus::Closed);
    assert_eq!(fuser.len(), 2, "the chain stops before the matmul");
    assert_eq!(fuser.program().instrs.len(), 2);
}

#[test]
fn an_op_of_another_shape_closes_it_and_leaves_no_trace() {
    // The chain is over [N, C, H, W]; an op writing [1, C, 1, 1] does not belong to it.
    let fuser = fuse(&[
        mul(read(0, FULL), read(1, CHANNEL), new(2, FULL)),
        exp(read(2, FULL), new(3, FULL)),
        add_scalar(last_read(1, CHANNEL), 7, new(4, CHANNEL)),
    ]);
    assert_eq!(fuser.status(), FuserStatus::Closed);
    assert_eq!(fuser.len(), 2);
    let program = fuser.program();
    assert!(
        program.scalars.is_empty(),
        "the refused op's scalar was not kept"
    );
    assert!(
        program.released.is_empty(),
        "the refused op's last read was not kept"
    );
}

#[test]
fn an_input_that_does_not_broadcast_is_refused() {
    // [N, C, H, 1]-like inputs broadcast; an input with a different size (id 5) does not.
    let fuser = fuse(&[
        mul(read(0, FULL), read(1, [1, 2, 3, 0]), new(2, FULL)),
        mul(read(2, FULL), read(3, [1, 2, 3, 5]), new(4, FULL)),
    ]);
    assert_eq!(fuser.status(), FuserStatus::Closed);
    assert_eq!(fuser.len(), 1);
}

#[test]
fn one_op_alone_is_not_worth_a_fused_pass() {
    let fuser = fuse(&[exp(read(0, FULL), new(1, FULL))]);
    assert!(!fuser.properties().ready);
    assert_eq!(fuser.properties().score, 0);
}

#[test]
fn a_dropped_tensor_of_the_chain_is_not_written() {
    let fuser = fuse(&[
        mul(read(0, FULL), read(1, FULL), new(2, FULL)),
        exp(read(2, FULL), new(3, FULL)),
        OperationIr::Drop(last_read(2, FULL)),
    ]);
    assert_eq!(fuser.len(), 3);
    let program = fuser.program();
    let outputs: Vec<u64> = program
        .outputs
        .iter()
        .map(|o| o.tensor.id.value())
        .collect();
    assert_eq!(outputs, [3]);
    assert_eq!(program.released, [TensorId::new(2)]);
}

#[test]
fn its_optimization_stands_for_every_op_it_took() {
    let mut fuser = fuse(&[
        mul(read(0, FULL), read(1, FULL), new(2, FULL)),
        exp(last_read(2, FULL), new(3, FULL)),
    ]);
    let CpuOptimization::Elementwise(optimization) = fuser.finish();
    assert_eq!(optimization.program().num_ops, 2);
    fuser.reset();
    assert_eq!(fuser.len(), 0);
    assert_eq!(fuser.status(), FuserStatus::Open);
}
