//! burnacc's Swin window-attention softmax kernels on `CpuFlex` (relative position bias
//! gathered from its table and the shifted-window mask added in the softmax pass; the softmax
//! backward in one pass) against Flex's (the plain-Burn reference of `SwinAttentionKernel`'s
//! default methods), with and without the mask, on Swin's 7×7 windows and a small 2×2 one,
//! inputs spread over several parallel tasks, strided views; f64 and bf16 take Flex's path. The
//! counters say which ran.
//!
//! Scores span `[-4, 4]`, the table `[-1, 1]`, masks hold timm's 0 / −100 (masked pairs
//! underflow to ~0). Softmax divides by a row sum taken in another order: the f32 reduction
//! tolerances, forward and backward.

use super::kernel_support::{
    assert_close, assert_identical, cast, counted, device, from_values, once,
    relative_position_index, shape, transposed, uniform, window_mask_values,
};
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::ops::{FloatTensorOps, IntTensorOps};
use burn::tensor::{FloatDType, TensorData};
use burnacc_fusion::CpuFlex;
use burnacc_fusion::counters::{WINDOW_SOFTMAX_BACKWARD, WINDOW_SOFTMAX_FORWARD};
use burnacc_kernels::swin_attention::SwinAttentionKernel;
use burnacc_tests::rng::HostRng;
use burnacc_tests::tolerance::{OpKind, Pass};

/// One attention geometry: `windows` windows of `window` tokens, `heads` heads, the mask's
/// window count (`None`: an unshifted block, no mask).
#[derive(Clone, Copy, Debug)]
struct Case {
    windows: usize,
    heads: usize,
    window: [usize; 2],
    mask_windows: Option<usize>,
}

impl Case {
    fn n(&self) -> usize {
        self.window[0] * self.window[1]
    }

    fn dims(&self) -> [usize; 4] {
        [self.windows, self.heads, self.n(), self.n()]
    }

    /// Rows of the relative position bias table, `(2·wh − 1)(2·ww − 1)`.
    fn offsets(&self) -> usize {
        (2 * self.window[0] - 1) * (2 * self.window[1] - 1)
    }

    /// timm's `relative_position_index` of the window: `[n · n]`, values in `0..offsets`.
    fn index_values(&self) -> Vec<i64> {
        relative_position_index(self.window)
    }

    /// A shifted-window mask `[num_windows, n, n]` ([`window_mask_values`]).
    fn mask(&self, num_windows: usize, seed: u64) -> FlexTensor {
        let n = self.n();
        from_values(
            window_mask_values(num_windows, n, seed),
            &[num_windows, n, n],
        )
    }

    /// `(scores, table, mask, grad)`, contiguous.
    fn inputs(&self, seed: u64) -> (FlexTensor, FlexTensor, Option<FlexTensor>, FlexTensor) {
        (
            uniform(&self.dims(), seed, -4.0, 4.0),
            uniform(&[self.offsets(), self.heads], seed + 1, -1.0, 1.0),
            self.mask_windows.map(|w| self.mask(w, seed + 2)),
            uniform(&self.dims(), seed + 3, -1.0, 1.0),
        )
    }
}

fn index_tensor(values: Vec<i64>) -> FlexTensor {
    let len = values.len();
    Flex::int_from_data(TensorData::new(values, [len]), &device())
}

/// Forward of `CpuFlex` against Flex's on the same inputs, then the backward of both on
/// Flex's probabilities and `grad`.
fn check(
    what: &str,
    scores: FlexTensor,
    table: FlexTensor,
    index: FlexTensor,
    mask: Option<FlexTensor>,
    grad: FlexTensor,
) {
    let what = format!(
        "{what} scores {:?}, table {:?}, mask {:?}",
        shape(&scores),
        shape(&table),
        mask.as_ref().map(shape)
    );
    let probs = once(&WINDOW_SOFTMAX_FORWARD, &what, || {
        CpuFlex::fused_window_softmax(scores.clone(), table.clone(), index.clone(), mask.clone())
    });
    let probs_ref = Flex::fused_window_softmax(scores, table, index, mask);
    assert_close(
        &format!("{what}: probs"),
        probs,
        probs_ref.clone(),
        OpKind::Reduction,
        Pass::Forward,
    );
    check_backward(&what, probs_ref, grad);
}

/// The softmax backward of `CpuFlex` against Flex's on the same `probs` and `grad`.
fn check_backward(what: &str, probs: FlexTensor, grad: FlexTensor) {
    let dscores = once(&WINDOW_SOFTMAX_BACKWARD, what, || {
        CpuFlex::fused_window_softmax_backward(probs.clone(), grad.clone())
    });
    assert_close(
        &format!("{what}: dscores"),
        dscores,
        Flex::fused_window_softmax_backward(probs, grad),
        OpKind::Reduction,
        Pass::Backward,
    );
}

fn check_case(case: Case, seed: u64) {
    let (scores, table, mask, grad) = case.inputs(seed);
    let index = index_tensor(case.index_values());
    check(&format!("{case:?}"), scores, table, index, mask, grad);
}

#[test]
fn matches_flex_on_swin_windows() {
    // Swin-T stage 1 at batch 2: 4 windows per image, shifted (windows = 2 · num_windows).
    let swin = Case {
        windows: 8,
        heads: 3,
        window: [7, 7],
        mask_windows: Some(4),
    };
    check_case(swin, 1);
    check_case(
        Case {
            mask_windows: None,
            ..swin
        },
        2,
    );
    // One window per image, one head: the mask is the same for every window.
    check_case(
        Case {
            windows: 2,
            heads: 1,
            window: [7, 7],
            mask_windows: Some(1),
        },
        3,
    );
}

#[test]
fn matches_flex_on_small_windows() {
    let small = Case {
        windows: 6,
        heads: 2,
        window: [2, 2],
        mask_windows: Some(3),
    };
    check_case(small, 11);
    check_case(
        Case {
            mask_windows: None,
            ..small
        },
        12,
    );
    // A non-square window, and one token per window (the softmax of one logit is 1).
    check_case(
        Case {
            windows: 10,
            heads: 3,
            window: [2, 3],
            mask_windows: Some(5),
        },
        13,
    );
    check_case(
        Case {
            windows: 3,
            heads: 2,
            window: [1, 1],
            mask_windows: None,
        },
        14,
    );

    // Any index within the table, not only timm's: every (q, k) pair gathers the row it names.
    let mut rng = HostRng::new(15);
    let index: Vec<i64> = (0..small.n() * small.n())
        .map(|_| rng.below(small.offsets() as u64) as i64)
        .collect();
    let (scores, table, mask, grad) = small.inputs(16);
    check(
        "random index",
        scores,
        table,
        index_tensor(index),
        mask,
        grad,
    );
}

#[test]
fn matches_flex_across_parallel_tasks() {
    // 16 windows × 3 heads × 49 rows of 49: 115 248 elements, 334 rows per task (8 tasks, the
    // last short; a task's rows span windows and heads).
    let large = Case {
        windows: 16,
        heads: 3,
        window: [7, 7],
        mask_windows: Some(8),
    };
    check_case(large, 21);
    check_case(
        Case {
            mask_windows: None,
            ..large
        },
        22,
    );
}

#[test]
fn matches_flex_on_strided_views() {
    for (case, seed) in [
        (
            Case {
                windows: 8,
                heads: 3,
                window: [7, 7],
                mask_windows: Some(4),
            },
            31,
        ),
        (
            Case {
                windows: 16,
                heads: 3,
                window: [7, 7],
                mask_windows: Some(8),
            },
            32,
        ),
        (
            Case {
                windows: 6,
                heads: 2,
                window: [2, 2],
                mask_windows: None,
            },
            33,
        ),
    ] {
        // Scores, mask and grad with their last two dimensions swapped (`[.., n, n]` views of
        // transposed buffers); the table a `[offsets, heads]` view of a `[heads, offsets]`
        // buffer.
        let (scores, _, mask, grad) = case.inputs(seed);
        let scores = transposed(scores);
        let mask = mask.map(transposed);
        let grad = transposed(grad);
        let table = transposed(uniform(&[case.heads, case.offsets()], seed + 10, -1.0, 1.0));
        let index = index_tensor(case.index_values());
        let what = format!("transposed {case:?}");
        check(
            &what,
            scores.clone(),
            table.clone(),
            index.clone(),
            mask.clone(),
            grad.clone(),
        );

        // The backward on strided probabilities.
        let probs = Flex::fused_window_softmax(scores, table, index, mask);
        let probs = transposed(Flex::float_swap_dims(probs, 2, 3).to_contiguous());
        check_backward(&format!("{what}, strided probs"), probs, grad);
    }
}

#[test]
fn f64_and_bf16_take_flexs_path() {
    let case = Case {
        windows: 4,
        heads: 2,
        window: [7, 7],
        mask_windows: Some(2),
    };
    for dtype in [FloatDType::F64, FloatDType::BF16] {
        let what = format!("{dtype:?}");
        let (scores, table, mask, grad) = case.inputs(41);
        let (scores, table, grad) = (cast(scores, dtype), cast(table, dtype), cast(grad, dtype));
        let mask = mask.map(|m| cast(m, dtype));
        let index = index_tensor(case.index_values());
        let probs = counted(&WINDOW_SOFTMAX_FORWARD, 0, &what, || {
            CpuFlex::fused_window_softmax(
                scores.clone(),
                table.clone(),
                index.clone(),
                mask.clone(),
            )
        });
        let probs_ref = Flex::fused_window_softmax(scores, table, index, mask);
        assert_identical(&format!("{what}: probs"), probs, probs_ref.clone());
        let dscores = counted(&WINDOW_SOFTMAX_BACKWARD, 0, &what, || {
            CpuFlex::fused_window_softmax_backward(probs_ref.clone(), grad.clone())
        });
        assert_identical(
            &format!("{what}: dscores"),
            dscores,
            Flex::fused_window_softmax_backward(probs_ref, grad),
        );
    }
}
