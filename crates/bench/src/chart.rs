//! The benchmark chart: one panel per model, a horizontal bar per configuration with its
//! samples/s (the seed project's baseline-vs-accelerated plot, for every mode at once).

use super::record::{BenchRecord, Status};
use anyhow::Result;
use burnacc_train::png::{FONT, register_font, write_png};
use plotters::prelude::*;
use std::path::Path;

const WIDTH: u32 = 1000;
const BAR_HEIGHT: u32 = 34;
const PANEL_EXTRA: u32 = 90;

/// The models of `records`, in order of first appearance.
fn models(records: &[BenchRecord]) -> Vec<String> {
    let mut models: Vec<String> = Vec::new();
    for r in records {
        if !models.contains(&r.model) {
            models.push(r.model.clone());
        }
    }
    models
}

/// Draws `records` as an RGB image: `(width, height, pixels)`.
pub fn render(records: &[BenchRecord]) -> Result<(u32, u32, Vec<u8>)> {
    register_font();
    let models = models(records);
    let panels: Vec<(String, Vec<&BenchRecord>)> = models
        .into_iter()
        .map(|m| {
            let rows = records.iter().filter(|r| r.model == m).collect();
            (m, rows)
        })
        .collect();
    let heights: Vec<u32> = panels
        .iter()
        .map(|(_, rows)| PANEL_EXTRA + BAR_HEIGHT * rows.len().max(1) as u32)
        .collect();
    let height: u32 = heights.iter().sum::<u32>().max(1);
    let mut pixels = vec![255u8; (WIDTH * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut top = 0i32;
        for ((model, rows), h) in panels.iter().zip(&heights) {
            let area = root.clone().shrink((0, top), (WIDTH, *h));
            draw_panel(&area, model, rows)?;
            top += *h as i32;
        }
        root.present().map_err(draw_error)?;
    }
    Ok((WIDTH, height, pixels))
}

fn draw_error<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the benchmark chart: {e:?}")
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    model: &str,
    rows: &[&BenchRecord],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let max = rows
        .iter()
        .filter_map(|r| r.samples_per_sec)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (unit, input, batch, device) = rows
        .first()
        .map(|r| {
            let unit = if r.input.starts_with("seq") {
                "sequences/s"
            } else {
                "images/s"
            };
            (unit, r.input.clone(), r.batch, r.device.clone())
        })
        .unwrap_or(("samples/s", String::new(), 0, String::new()));
    let caption = format!("{model} training, batch {batch}, {input}, {device}: {unit}");
    let n = rows.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 22))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(230)
        .build_cartesian_2d(0.0..max * 1.25, (0..n).into_segmented())
        .map_err(draw_error)?;
    // Segment 0 is at the bottom: the first record gets the top segment.
    let labels: Vec<String> = rows.iter().rev().map(|r| r.label()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style((FONT, 15))
        .draw()
        .map_err(draw_error)?;
    for (i, r) in rows.iter().rev().enumerate() {
        let color = if r.framework == "burnacc" {
            if r.mode == "acc" {
                RGBColor(220, 90, 30)
            } else {
                RGBColor(90, 120, 200)
            }
        } else {
            RGBColor(120, 120, 120)
        };
        let text = match (r.status, r.samples_per_sec) {
            (Some(Status::Ok), Some(v)) => {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [
                            (0.0, SegmentValue::Exact(i)),
                            (v, SegmentValue::Exact(i + 1)),
                        ],
                        color.filled(),
                    )))
                    .map_err(draw_error)?;
                format!("{v:.1}")
            }
            (status, _) => status.unwrap_or(Status::Failed).as_str().to_owned(),
        };
        let x = r
            .samples_per_sec
            .filter(|_| r.status == Some(Status::Ok))
            .unwrap_or(0.0);
        chart
            .draw_series(std::iter::once(Text::new(
                format!(" {text}"),
                (x, SegmentValue::CenterOf(i)),
                (FONT, 15).into_font(),
            )))
            .map_err(draw_error)?;
    }
    Ok(())
}

/// Draws `records` into a PNG file at `path` (written atomically).
pub fn write_chart(records: &[BenchRecord], path: &Path) -> Result<()> {
    let (width, height, pixels) = render(records)?;
    write_png(width, height, pixels, path)
}
