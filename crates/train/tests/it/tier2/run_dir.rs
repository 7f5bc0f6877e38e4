//! Unit checks of `burnacc_train::run_dir` through its public API.

use burnacc_train::run_dir::*;

#[test]
fn run_dirs_are_never_reused() {
    let root = tempfile::tempdir().unwrap();
    let a = fresh_run_dir(root.path()).unwrap();
    std::fs::write(a.join("log.jsonl"), "kept").unwrap();
    let b = fresh_run_dir(root.path()).unwrap();
    assert_ne!(a, b);
    assert_eq!(
        std::fs::read_to_string(a.join("log.jsonl")).unwrap(),
        "kept"
    );
}

#[test]
fn atomic_write_leaves_no_temporary() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("summary.json");
    write_atomic(&file, b"{}").unwrap();
    write_atomic(&file, b"{\"a\":1}").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"a\":1}");
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
}
