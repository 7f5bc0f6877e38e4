//! Unit checks of `burnacc_tests::tolerance` through its public API.

use burnacc_tests::tolerance::*;

const T: Tolerance = tolerance(OpKind::Elementwise, Precision::F32, Pass::Forward);

#[test]
fn gradients_are_one_notch_looser() {
    for kind in [OpKind::Elementwise, OpKind::Reduction, OpKind::Contraction] {
        for p in [Precision::F32, Precision::F16, Precision::BF16] {
            let f = tolerance(kind, p, Pass::Forward);
            let b = tolerance(kind, p, Pass::Backward);
            assert!(b.rel > f.rel && b.abs > f.abs, "{kind:?} {p:?}");
        }
    }
}

#[test]
fn reports_the_worst_element() {
    let shape = [2, 3];
    let expected = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut got = expected;
    got[4] = 5.001; // 2e-4 relative: outside 1e-5
    got[1] = 2.0001; // 5e-5 relative: outside, but less so
    let m = compare("t", &shape, &got, &expected, Precision::F32, T).unwrap_err();
    assert_eq!(m.failing, 2);
    let w = m.worst.unwrap();
    assert_eq!(w.index, vec![1, 1]);
    assert_eq!(w.expected, 5.0);
    assert!((w.rel_err - 2e-4).abs() < 1e-9);
}

#[test]
fn nan_fails_and_equal_values_pass() {
    assert!(compare("t", &[1], &[f64::NAN], &[1.0], Precision::F32, T).is_err());
    assert!(
        compare(
            "t",
            &[2],
            &[f64::INFINITY, 0.0],
            &[f64::INFINITY, 0.0],
            Precision::F32,
            T
        )
        .is_ok()
    );
    // The reference is rounded to f32 first: an f64 value between two f32 values passes
    // against its f32 rounding at any tolerance.
    let x = 0.1f64;
    assert!(
        compare(
            "t",
            &[1],
            &[x as f32 as f64],
            &[x],
            Precision::F32,
            Tolerance { rel: 0.0, abs: 0.0 }
        )
        .is_ok()
    );
}

#[test]
fn unravel_is_row_major() {
    assert_eq!(unravel(0, &[7, 33, 127]), vec![0, 0, 0]);
    assert_eq!(unravel(33 * 127 + 128, &[7, 33, 127]), vec![1, 1, 1]);
}
