//! The `bench` binary on the CPU: every case of a small plan runs (or is skipped with its
//! reason) in its own process, the numbers of each record agree with each other, and the JSON
//! lines, the Markdown table and the PNG chart are written.

use burnacc_bench::{BenchRecord, Status, read_records};
use std::path::{Path, PathBuf};
use std::process::Command;

fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

fn bench(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .output()
        .expect("cannot run bench");
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn find<'a>(
    records: &'a [BenchRecord],
    model: &str,
    mode: &str,
    precision: &str,
) -> &'a BenchRecord {
    records
        .iter()
        .find(|r| r.model == model && r.mode == mode && r.precision == precision)
        .unwrap_or_else(|| panic!("no record for {model} {mode} {precision}"))
}

#[test]
fn bench_measures_every_case_and_writes_its_report() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    let quickstart = configs().join("quickstart.toml");
    let bert = configs().join("bench/bert_base.toml");
    bench(&[
        quickstart.to_str().unwrap(),
        bert.to_str().unwrap(),
        "--set",
        "backend.device=cpu",
        "--set",
        "train.batch_size=2",
        "--set",
        "bert_base:data.max_length=8",
        "--set",
        "bert_base:model.name=minilm-l6",
        "--modes",
        "eager,fused,acc",
        "--precisions",
        "f32,bf16",
        "--warmup",
        "1",
        "--steps",
        "1",
        "--windows",
        "3",
        "--out",
        out_dir,
    ]);
    let records = read_records(&out.path().join("results.jsonl")).unwrap();
    assert_eq!(
        records.len(),
        2 * 3 * 2,
        "one record per case: {records:#?}"
    );

    for model in ["resnet18", "minilm-l6"] {
        // Burn's fusion needs CubeCL; autocast is burnacc's (mode acc).
        for (mode, precision) in [("fused", "f32"), ("fused", "bf16"), ("eager", "bf16")] {
            let r = find(&records, model, mode, precision);
            assert_eq!(r.status, Some(Status::Skipped), "{r:?}");
            assert!(r.reason.as_deref().is_some_and(|w| !w.is_empty()));
        }
        for (mode, precision) in [("eager", "f32"), ("acc", "f32"), ("acc", "bf16")] {
            let r = find(&records, model, mode, precision);
            assert_eq!(r.status, Some(Status::Ok), "{r:?}");
            assert_eq!(r.device, "cpu");
            assert_eq!(r.batch, 2);
            assert_eq!(r.steps_done, 1 + 3);
            assert_eq!(r.window_step_secs.len(), 3);
            let mut windows = r.window_step_secs.clone();
            windows.sort_by(f64::total_cmp);
            let step = r.step_secs.unwrap();
            assert_eq!(step, windows[1], "the median window");
            assert!((r.samples_per_sec.unwrap() - 2.0 / step).abs() < 1e-9 * (2.0 / step));
            let (init, first, warm) = (
                r.init_secs.unwrap(),
                r.first_step_secs.unwrap(),
                r.warmup_secs.unwrap(),
            );
            assert!(init > 0.0 && first > 0.0 && warm >= init + first, "{r:?}");
            // The CPU peak is the allocator's: at least the f32 weights, gradients and
            // optimizer state must have been live at once.
            let params: u64 = if model == "resnet18" {
                174_000
            } else {
                22_000_000
            };
            assert!(
                r.peak_memory_bytes.unwrap() > 2 * 4 * params,
                "{model} {mode} {precision}: peak {:?}",
                r.peak_memory_bytes
            );
        }
        assert_eq!(
            find(&records, model, "acc", "f32").input,
            if model == "resnet18" { "28px" } else { "seq8" }
        );
    }

    let table = std::fs::read_to_string(out.path().join("table.md")).unwrap();
    assert_eq!(
        table
            .lines()
            .filter(|l| l.starts_with("| resnet18") || l.starts_with("| minilm-l6"))
            .count(),
        12
    );
    let chart = image::open(out.path().join("chart.png")).unwrap();
    assert_eq!(chart.width(), 1000);
    // Two panels of six bars each.
    assert_eq!(chart.height(), 2 * (90 + 34 * 6));
}

#[test]
fn a_case_past_its_time_limit_is_reported_as_timeout() {
    let out = tempfile::tempdir().unwrap();
    let quickstart = configs().join("quickstart.toml");
    bench(&[
        quickstart.to_str().unwrap(),
        "--set",
        "backend.device=cpu",
        "--modes",
        "eager",
        "--precisions",
        "f32",
        "--timeout",
        "0",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let records = read_records(&out.path().join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status, Some(Status::Timeout), "{:?}", records[0]);
    assert!(records[0].step_secs.is_none());
}

#[test]
fn merged_results_are_reported_without_running_anything() {
    let out = tempfile::tempdir().unwrap();
    let results = out.path().join("torch.jsonl");
    let record = |mode: &str, speed: f64| BenchRecord {
        framework: "pytorch".into(),
        model: "resnet50".into(),
        mode: mode.into(),
        precision: "bf16".into(),
        device: "cuda:0".into(),
        batch: 256,
        input: "224px".into(),
        status: Some(Status::Ok),
        step_secs: Some(256.0 / speed),
        samples_per_sec: Some(speed),
        ..Default::default()
    };
    let lines = burnacc_bench::to_json_lines(&[record("eager", 4000.0), record("compile", 6000.0)]);
    std::fs::write(&results, lines).unwrap();
    let report = out.path().join("report");
    let stdout = bench(&[
        "--merge",
        results.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ])
    .stdout;
    let table = String::from_utf8(stdout).unwrap();
    // Each row against the fastest PyTorch configuration of its model.
    assert!(table.contains("| 4000.0 | 0.67× |"), "{table}");
    assert!(table.contains("| 6000.0 | 1.00× |"), "{table}");
    assert!(report.join("chart.png").is_file() && report.join("table.md").is_file());
}

#[test]
fn warm_start_reruns_a_cubecl_case_on_its_own_kernel_cache() {
    let out = tempfile::tempdir().unwrap();
    let quickstart = configs().join("quickstart.toml");
    bench(&[
        quickstart.to_str().unwrap(),
        "--set",
        "backend.device=wgpu",
        "--set",
        "model.base_width=4",
        "--set",
        "data.image_size=16",
        "--set",
        "train.batch_size=2",
        "--modes",
        "eager",
        "--precisions",
        "f32",
        "--warmup",
        "1",
        "--steps",
        "1",
        "--windows",
        "1",
        "--warm-start",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let records = read_records(&out.path().join("results.jsonl")).unwrap();
    let caches: Vec<_> = records
        .iter()
        .map(|r| (r.status, r.kernel_cache.as_deref()))
        .collect();
    assert_eq!(
        caches,
        [
            (Some(Status::Ok), Some("cold")),
            (Some(Status::Ok), Some("warm"))
        ],
        "{records:#?}"
    );
    assert_eq!(records[0].device, "wgpu");
    assert!(
        !out.path().join(".kernel-cache").exists(),
        "the case's kernel cache is removed"
    );
}

#[test]
fn real_data_cases_read_the_recipes_data_through_the_prefetcher() {
    let root = tempfile::tempdir().unwrap();
    let recipe = crate::common::tiny_recipe(root.path(), 1, &[]);
    let file = root.path().join("tiny.toml");
    std::fs::write(&file, burnacc_train::recipe::recipe_toml(&recipe)).unwrap();
    let out = root.path().join("bench");
    bench(&[
        file.to_str().unwrap(),
        "--modes",
        "eager,acc",
        "--precisions",
        "f32",
        "--data",
        "synthetic,real",
        "--warmup",
        "1",
        "--steps",
        "4",
        "--windows",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let records = read_records(&out.join("results.jsonl")).unwrap();
    assert_eq!(records.len(), 2 * 2, "{records:#?}");
    for r in &records {
        assert_eq!(r.status, Some(Status::Ok), "{r:?}");
        assert_eq!(
            (r.model.as_str(), r.batch, r.input.as_str()),
            ("resnet18", 8, "16px")
        );
        assert_eq!(r.steps_done, 1 + 3 * 4);
        match r.data.as_deref() {
            Some("synthetic") => assert_eq!(r.data_wait_fraction, None, "{r:?}"),
            // 16 steps of 8 over 24 training images: the stream crosses epochs.
            Some("real") => {
                let wait = r.data_wait_fraction.expect("real data measures its wait");
                assert!((0.0..=1.0).contains(&wait), "{r:?}");
                assert!(r.label().ends_with("real data"), "{}", r.label());
            }
            other => panic!("data {other:?}"),
        }
    }
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(
        table.contains("| f32 | real (waited ") && table.contains("| f32 | synthetic |"),
        "{table}"
    );
    // A broken recipe path fails its real-data case only, with the file named.
    let missing = root.path().join("nowhere");
    let out = root.path().join("bench-missing");
    bench(&[
        file.to_str().unwrap(),
        "--set",
        "data.dataset=\"image-folder\"",
        "--set",
        &format!("data.path={:?}", missing.display().to_string()),
        "--modes",
        "eager",
        "--precisions",
        "f32",
        "--data",
        "synthetic,real",
        "--warmup",
        "1",
        "--steps",
        "1",
        "--windows",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let records = read_records(&out.join("results.jsonl")).unwrap();
    let real = records
        .iter()
        .find(|r| r.data.as_deref() == Some("real"))
        .unwrap();
    assert_eq!(real.status, Some(Status::Failed), "{real:?}");
    assert!(
        real.reason.as_deref().unwrap().contains("nowhere"),
        "{real:?}"
    );
    let synthetic = records
        .iter()
        .find(|r| r.data.as_deref() == Some("synthetic"))
        .unwrap();
    assert_eq!(synthetic.status, Some(Status::Ok), "{synthetic:?}");
}

#[test]
fn kernels_of_a_recipe_apply_to_its_acc_cases_only() {
    use burnacc_bench::{BenchCase, StepCounts};
    use burnacc_train::recipe::{KernelsSection, Mode};
    let case = |mode| BenchCase {
        recipe: configs().join("bench/swin_t.toml"),
        sets: vec!["backend.device=cpu".into()],
        mode,
        precision: "f32".into(),
        data: Default::default(),
        counts: StepCounts {
            warmup: 1,
            steps: 1,
            windows: 1,
        },
        count_launches: false,
    };
    // Mode acc as shipped: every kernel but the optimizer the recipe does not train with.
    let acc = case(Mode::Acc).resolve_recipe().unwrap();
    let expected: Vec<&str> = KernelsSection::keys()
        .into_iter()
        .filter(|key| *key != "kernels.sgd")
        .collect();
    assert_eq!(acc.kernels.enabled(), expected);
    for mode in [Mode::Eager, Mode::Fused] {
        let recipe = case(mode).resolve_recipe().unwrap();
        assert!(recipe.kernels.enabled().is_empty(), "{mode}");
    }
}
