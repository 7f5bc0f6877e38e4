//! Training curves: `curves.png` in a run folder, drawn from its `log.jsonl` — loss, accuracy
//! (training batches and held-out), learning rate, samples/s and memory against the step.
//! Written at the end of every run and by `train plot RUN_DIR` at any time.

use crate::png::{FONT, register_font, write_png};
use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const PANEL_WIDTH: u32 = 560;
const PANEL_HEIGHT: u32 = 320;
const TRAIN_COLOR: RGBColor = RGBColor(90, 120, 200);
const VAL_COLOR: RGBColor = RGBColor(220, 90, 30);
const TOP5_COLOR: RGBColor = RGBColor(60, 160, 90);

/// One named series of `(step, value)` points.
struct Series {
    name: &'static str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// The points `value` takes from `records` (records without a finite value are left out).
fn series(
    records: &[serde_json::Value],
    name: &'static str,
    color: RGBColor,
    value: impl Fn(&serde_json::Value) -> Option<f64>,
) -> Series {
    let points = records
        .iter()
        .filter_map(|r| Some((r["step"].as_f64()?, value(r)?)))
        .filter(|(_, v)| v.is_finite())
        .collect();
    Series {
        name,
        color,
        points,
    }
}

/// The panels of the figure: a title and its series each.
fn panels(records: &[serde_json::Value]) -> Vec<(&'static str, Vec<Series>)> {
    let field = |key: &'static str| move |r: &serde_json::Value| r[key].as_f64();
    let mib = 1.0 / (1024.0 * 1024.0);
    vec![
        (
            "loss",
            vec![
                series(records, "training batch", TRAIN_COLOR, field("loss")),
                series(records, "held-out", VAL_COLOR, field("val_loss")),
            ],
        ),
        (
            "accuracy",
            vec![
                series(
                    records,
                    "training batch",
                    TRAIN_COLOR,
                    field("train_accuracy"),
                ),
                series(records, "held-out top-1", VAL_COLOR, field("val_accuracy")),
                series(
                    records,
                    "held-out top-5",
                    TOP5_COLOR,
                    field("val_top5_accuracy"),
                ),
            ],
        ),
        (
            "learning rate",
            vec![series(records, "lr", TRAIN_COLOR, field("lr"))],
        ),
        (
            "samples/s",
            vec![series(
                records,
                "samples/s",
                TRAIN_COLOR,
                field("samples_per_sec"),
            )],
        ),
        (
            "memory (MiB)",
            vec![
                series(records, "peak", VAL_COLOR, |r| {
                    r["memory"]["peak"].as_f64().map(|b| b * mib)
                }),
                series(records, "in use", TRAIN_COLOR, |r| {
                    r["memory"]["in_use"].as_f64().map(|b| b * mib)
                }),
            ],
        ),
    ]
}

/// Draws the curves of `records` (the lines of a `log.jsonl`) as an RGB image:
/// `(width, height, pixels)`. A panel without points shows its title only.
pub fn render_curves(records: &[serde_json::Value]) -> Result<(u32, u32, Vec<u8>)> {
    register_font();
    let panels = panels(records);
    let (columns, rows) = (2u32, (panels.len() as u32).div_ceil(2));
    let (width, height) = (PANEL_WIDTH * columns, PANEL_HEIGHT * rows);
    let mut pixels = vec![255u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let areas = root.split_evenly((rows as usize, columns as usize));
        for ((title, series), area) in panels.iter().zip(&areas) {
            draw_panel(area, title, series)?;
        }
        root.present().map_err(draw_error)?;
    }
    Ok((width, height, pixels))
}

fn draw_error<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the training curves: {e:?}")
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[Series],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let points = series.iter().flat_map(|s| &s.points);
    let (mut x_max, mut y_min, mut y_max) = (1.0f64, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in points {
        x_max = x_max.max(x);
        y_min = y_min.min(y);
        y_max = y_max.max(y);
    }
    if !y_min.is_finite() {
        area.titled(title, (FONT, 20)).map_err(draw_error)?;
        return Ok(());
    }
    // A flat series still gets a visible band.
    let pad = ((y_max - y_min) * 0.05).max(y_max.abs() * 0.05).max(1e-12);
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, (y_min - pad)..(y_max + pad))
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .label_style((FONT, 13))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| axis_number(*v))
        .draw()
        .map_err(draw_error)?;
    for s in series.iter().filter(|s| !s.points.is_empty()) {
        let color = s.color;
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(draw_error)?
            .label(s.name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 2, color.filled())))
            .map_err(draw_error)?;
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(draw_error)?;
    Ok(())
}

/// `v` in 4 significant digits: plain between 0.01 and 10⁴, otherwise in scientific notation.
fn axis_number(v: f64) -> String {
    if v == 0.0 || (1e-2..1e4).contains(&v.abs()) {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else {
        format!("{v:.2e}")
    }
}

/// The records of `run_dir/log.jsonl` (a line cut short by a crash is skipped).
pub fn read_log(run_dir: &Path) -> Result<Vec<serde_json::Value>> {
    let path = run_dir.join("log.jsonl");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a run folder?)",
            path.display(),
            run_dir.display()
        )
    })?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// Draws `run_dir/curves.png` from `run_dir/log.jsonl`; returns its path.
pub fn write_curves(run_dir: &Path) -> Result<PathBuf> {
    let records = read_log(run_dir)?;
    let (width, height, pixels) = render_curves(&records)?;
    let path = run_dir.join("curves.png");
    write_png(width, height, pixels, &path)?;
    Ok(path)
}
