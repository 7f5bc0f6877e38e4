//! Unit checks of `burnacc_tests::rng` through its public API.

use burnacc_tests::rng::HostRng;

#[test]
fn same_seed_same_stream() {
    let a: Vec<u64> = {
        let mut r = HostRng::new(7);
        (0..8).map(|_| r.next_u64()).collect()
    };
    let mut r = HostRng::new(7);
    assert!(a.iter().all(|v| *v == r.next_u64()));
}

#[test]
fn normal_has_unit_moments() {
    let mut r = HostRng::new(1);
    let x = r.normal_vec(20_000, 1.0);
    let mean = x.iter().map(|v| *v as f64).sum::<f64>() / x.len() as f64;
    let var = x.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / x.len() as f64;
    assert!(mean.abs() < 0.03, "mean {mean}");
    assert!((var - 1.0).abs() < 0.05, "variance {var}");
}
