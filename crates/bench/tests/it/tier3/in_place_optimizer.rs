//! A benchmark case of mode `acc` on the CPU steps its parameters in place: the fused AdamW
//! loop finds every parameter and state buffer unshared and copies none of them (copies of
//! every parameter, first moment and second moment per step were a tenth of Swin-T's step).

use crate::common::tiny_swin_text;
use burnacc_bench::{BenchCase, StepCounts, run_case_here};
use burnacc_kernels::optim::{multi_tensor_adam_launches, multi_tensor_buffer_copies};
use burnacc_train::recipe::Mode;
use std::time::Instant;

#[test]
fn an_acc_case_updates_parameters_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("tiny_swin.toml");
    std::fs::write(&recipe, tiny_swin_text(dir.path(), 4)).unwrap();
    let case = BenchCase {
        recipe,
        sets: vec!["backend.device=cpu".into()],
        mode: Mode::Acc,
        precision: "f32".into(),
        data: Default::default(),
        counts: StepCounts {
            warmup: 1,
            steps: 1,
            windows: 2,
        },
        count_launches: false,
    };
    let (adam, copies) = (multi_tensor_adam_launches(), multi_tensor_buffer_copies());
    let record = run_case_here(&case, Instant::now(), &|_| {});
    assert_eq!(record.steps_done, 3, "{record:?}");
    assert!(
        multi_tensor_adam_launches() > adam,
        "the fused AdamW did not run"
    );
    assert_eq!(
        multi_tensor_buffer_copies() - copies,
        0,
        "the fused AdamW copied parameters or state: something else still holds them"
    );
}
