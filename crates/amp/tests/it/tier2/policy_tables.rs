//! The autocast policy tables of burnacc-amp name real ops of Burn 0.21's `Backend`,
//! and the generated `forward.rs` casts exactly what the tables say (a stale `forward.rs`,
//! not regenerated after a table changed, fails here).

use burnacc_amp::policy::{CastPolicy, FLOAT32_OPS, LOWER_PRECISION_OPS, cast_policy};
use burnacc_backend::forward::OP_NAMES;

const FORWARD: &str = include_str!("../../../../backend/src/forward.rs");

/// `(name, policy tag, float inputs)` of each `op!` line: the tag is `lower`, `float32`,
/// `promote` or `None`; the inputs count as the generator counts them (a list as two).
fn op_lines() -> Vec<(&'static str, Option<&'static str>, usize)> {
    FORWARD
        .lines()
        .filter_map(|line| line.trim().strip_prefix("op!("))
        .map(|rest| {
            let (_, rest) = rest.split_once(", ").unwrap();
            let (head, sig) = rest.split_once("fn ").unwrap();
            let name = sig.split('(').next().unwrap();
            let head = head.trim().trim_end_matches(',');
            if head.is_empty() {
                return (name, None, 0);
            }
            let (tag, lists) = head.split_once('[').unwrap();
            let groups: Vec<usize> = format!("[{lists}")
                .split(']')
                .filter(|g| !g.is_empty())
                .map(|g| {
                    g.trim_start_matches('[')
                        .split(", ")
                        .filter(|a| !a.is_empty())
                        .count()
                })
                .collect();
            assert_eq!(groups.len(), 3, "{name}: {head}");
            (name, Some(tag), groups[0] + groups[1] + 2 * groups[2])
        })
        .collect()
}

#[test]
fn every_policy_name_is_an_op() {
    for name in LOWER_PRECISION_OPS.iter().chain(FLOAT32_OPS) {
        assert!(
            OP_NAMES.contains(name),
            "`{name}` is not an op of Burn 0.21's Backend"
        );
    }
    for name in LOWER_PRECISION_OPS {
        assert!(!FLOAT32_OPS.contains(name), "`{name}` is in both lists");
    }
}

#[test]
fn forward_rs_casts_what_the_tables_say() {
    let lines = op_lines();
    assert_eq!(lines.len(), OP_NAMES.len());
    let mut tagged = 0;
    for (name, tag, inputs) in lines {
        let expected = match cast_policy(name, inputs) {
            CastPolicy::LowerPrecision => Some("lower"),
            CastPolicy::Float32 => Some("float32"),
            CastPolicy::Promote => Some("promote"),
            CastPolicy::Keep => None,
        };
        assert_eq!(
            tag, expected,
            "`{name}` in forward.rs: regenerate it with scripts/gen_forwarding.py"
        );
        tagged += usize::from(tag.is_some());
    }
    // Every listed op is tagged, and so are the ops with several float inputs.
    assert!(
        tagged > LOWER_PRECISION_OPS.len() + FLOAT32_OPS.len(),
        "{tagged} tagged ops"
    );
}
