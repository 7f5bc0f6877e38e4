//! `train --profile`: the trace covers the chosen window of steps with nested, ordered phase
//! spans and the ops `Acc` saw, and profiling (which synchronises the device inside the
//! window) leaves the training results unchanged.

use burnacc_train::recipe::{DeviceSpec, Mode};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{ProfileRequest, RunOptions, run_checked};
use std::path::Path;

use crate::common::{losses, tiny_recipe};

const STEPS: usize = 5;

fn events_named<'a>(events: &'a [serde_json::Value], cat: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["cat"] == cat).collect()
}

#[test]
fn profile_traces_the_window_and_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(root.path(), STEPS, &[]);
    let plain = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let profiled = RunOptions {
        quiet: true,
        profile: Some(ProfileRequest {
            steps: 2,
            folder: None,
        }),
        ..Default::default()
    };
    let tiny = Path::new("tiny.toml");
    let without = run_checked(
        &recipe,
        tiny,
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &plain,
    )
    .unwrap();
    let with = run_checked(
        &recipe,
        tiny,
        Stack::new(Mode::Acc, DeviceSpec::Cpu),
        &profiled,
    )
    .unwrap();
    assert_eq!(
        losses(&with),
        losses(&without),
        "profiling changed the training losses"
    );
    assert!(!without.run_dir.join("trace.json").exists());

    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(with.run_dir.join("trace.json")).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let phases = events_named(events, "phase");
    // Steps 1 and 2 compile and warm up; the window is steps 3 and 4.
    let steps: Vec<&str> = phases
        .iter()
        .filter_map(|e| e["name"].as_str().filter(|n| n.starts_with("step ")))
        .collect();
    assert_eq!(steps, ["step 3", "step 4"]);
    for step in phases
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("step "))
    {
        let (start, dur) = (step["ts"].as_f64().unwrap(), step["dur"].as_f64().unwrap());
        assert!(dur > 0.0);
        let inside: Vec<&&serde_json::Value> = phases
            .iter()
            .filter(|e| !e["name"].as_str().unwrap().starts_with("step "))
            .filter(|e| {
                let t = e["ts"].as_f64().unwrap();
                t >= start && t + e["dur"].as_f64().unwrap() <= start + dur + 1e-3
            })
            .collect();
        let names: Vec<&str> = inside.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["forward", "backward", "all_reduce", "optimizer"],
            "phases of {step}"
        );
        // The phases tile the step: each starts where the previous one ended.
        let sum: f64 = inside.iter().map(|e| e["dur"].as_f64().unwrap()).sum();
        assert!((sum - dur).abs() <= 1e-3 * dur.max(1.0), "{sum} vs {dur}");
    }
    let ops = events_named(events, "op");
    let names: std::collections::BTreeSet<&str> =
        ops.iter().map(|e| e["name"].as_str().unwrap()).collect();
    for op in ["conv2d", "float_add"] {
        assert!(names.contains(op), "{op} not traced; traced: {names:?}");
    }
    // ResNet-18: 20 convolutions per forward pass, two steps traced.
    let convs = ops.iter().filter(|e| e["name"] == "conv2d").count();
    assert_eq!(convs, 2 * 20, "conv2d spans");
}
