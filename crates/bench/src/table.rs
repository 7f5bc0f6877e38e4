//! The benchmark table in Markdown, as docs/benchmarks.md shows it.

use super::record::{BenchRecord, Status};

/// The record every row of a model is compared with: PyTorch's fastest, if PyTorch ran, else
/// burnacc's `eager f32` on synthetic data, else the first record that completed.
fn baseline<'a>(records: &'a [BenchRecord], model: &str) -> Option<&'a BenchRecord> {
    let ok = |r: &&BenchRecord| r.model == model && r.status == Some(Status::Ok);
    let fastest_torch = records
        .iter()
        .filter(ok)
        .filter(|r| r.framework == "pytorch")
        .max_by(|a, b| a.samples_per_sec.partial_cmp(&b.samples_per_sec).unwrap());
    fastest_torch
        .or_else(|| {
            records.iter().filter(ok).find(|r| {
                r.framework == "burnacc"
                    && r.mode == "eager"
                    && r.precision == "f32"
                    && r.data.as_deref() != Some("real")
            })
        })
        .or_else(|| records.iter().find(ok))
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// One Markdown table of `records`, with a speed ratio against each model's baseline.
pub fn markdown_table(records: &[BenchRecord]) -> String {
    let mut out = String::from(
        "| model | input | batch | framework | mode | precision | data | samples/s | vs baseline \
         | step ms | first step s | warm-up s | kernel cache | peak memory MiB \
         | launches/step | reserved MiB/step | status |\n\
         |---|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|\n",
    );
    for r in records {
        let base = baseline(records, &r.model);
        let ratio = match (base.and_then(|b| b.samples_per_sec), r.samples_per_sec) {
            (Some(b), Some(v)) if r.status == Some(Status::Ok) => format!("{:.2}×", v / b),
            _ => "–".into(),
        };
        let status = match (r.status, &r.reason) {
            (Some(Status::Ok), _) => "ok".to_owned(),
            (status, reason) => format!(
                "{}{}",
                status.unwrap_or(Status::Failed).as_str(),
                reason
                    .as_deref()
                    .map(|r| format!(": {}", r.replace('|', "/")))
                    .unwrap_or_default()
            ),
        };
        // Real data: with the fraction of the step spent waiting for it.
        let data = match (r.data.as_deref(), r.data_wait_fraction) {
            (Some("real"), Some(wait)) => format!("real (waited {:.1} %)", wait * 100.0),
            (data, _) => data.unwrap_or("synthetic").to_owned(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} \
             |\n",
            r.model,
            r.input,
            r.batch,
            r.framework,
            r.mode,
            r.precision,
            data,
            opt(r.samples_per_sec, 1),
            ratio,
            opt(r.step_secs.map(|s| s * 1e3), 1),
            opt(r.first_step_secs, 2),
            opt(r.warmup_secs, 2),
            r.kernel_cache.as_deref().unwrap_or("–"),
            opt(r.peak_memory_bytes.map(|b| b as f64 / (1 << 20) as f64), 0),
            opt(r.launches_per_step, 0),
            opt(r.reserved_bytes_per_step.map(|b| b / (1 << 20) as f64), 1),
            status
        ));
    }
    out.push_str(
        "\nBaseline of each model: PyTorch's fastest configuration when PyTorch ran, else \
         burnacc eager f32. Warm-up: process start to the end of the warm-up steps; kernel \
         cache cold = compiled and autotuned from scratch, warm = with the cache of a previous \
         run. Launches and reserved memory per step: CubeCL devices, counted from CubeCL's \
         logs.\n",
    );
    out
}
