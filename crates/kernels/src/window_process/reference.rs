//! Window processing with plain Burn ops on any backend: a `select` of map rows by the index
//! maps of [`WindowGeometry`]. This is a different construction from timm's roll + pad +
//! reshape/permute, so agreeing with it checks the kernels' index arithmetic independently.
//! Differentiable through Burn's autodiff (`select`'s backward scatters back).

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use super::WindowGeometry;

fn index<B: Backend>(values: Vec<i64>, device: &B::Device) -> Tensor<B, 1, Int> {
    let len = values.len();
    Tensor::from_data(TensorData::new(values, [len]), device)
}

/// `x: [batch, h, w, c]` → `[batch · nh · nw, wh · ww, c]`: rolled by `−shift`, zero-padded,
/// partitioned (see [`super`]).
pub fn window_process_reference<B: Backend>(
    x: Tensor<B, 4>,
    geometry: WindowGeometry,
) -> Tensor<B, 3> {
    let [batch, h, w, c] = x.dims();
    assert_eq!(
        [h, w],
        geometry.resolution,
        "window_process: input map {h}x{w} does not match the geometry"
    );
    let sources = geometry.process_sources();
    let padded = sources.iter().any(Option::is_none);
    let rows = x.reshape([batch, h * w, c]);
    // Padding reads an extra zero row appended after the map.
    let rows = if padded {
        let zero = Tensor::zeros_like(&rows.clone().narrow(1, 0, 1));
        Tensor::cat(vec![rows, zero], 1)
    } else {
        rows
    };
    let device = rows.device();
    let sources = sources
        .into_iter()
        .map(|s| s.unwrap_or(h * w) as i64)
        .collect();
    rows.select(1, index::<B>(sources, &device)).reshape([
        batch * geometry.windows_per_image(),
        geometry.window_area(),
        c,
    ])
}

/// `windows: [batch · nh · nw, wh · ww, c]` → `[batch, h, w, c]`: merged, cropped, rolled by
/// `+shift` (see [`super`]).
pub fn window_process_reverse_reference<B: Backend>(
    windows: Tensor<B, 3>,
    geometry: WindowGeometry,
) -> Tensor<B, 4> {
    let [count, area, c] = windows.dims();
    let per_image = geometry.windows_per_image();
    assert!(
        area == geometry.window_area() && count % per_image == 0,
        "window_process_reverse: [{count}, {area}, {c}] windows do not match the geometry"
    );
    let batch = count / per_image;
    let [h, w] = geometry.resolution;
    let device = windows.device();
    let sources = geometry
        .reverse_sources()
        .into_iter()
        .map(|s| s as i64)
        .collect();
    windows
        .reshape([batch, per_image * area, c])
        .select(1, index::<B>(sources, &device))
        .reshape([batch, h, w, c])
}
