//! [`WindowProcessKernel`] for Burn's fusion backend `Fusion<B>` (what `burn::backend::Wgpu`
//! is): each call is one recorded custom operation ([`crate::custom_op`]) whose declared output
//! shape follows from the geometry, in the input's dtype.

use burn::tensor::Shape;
use burn::tensor::ops::FloatTensor;
use burn_fusion::{Fusion, FusionBackend};

use super::{WindowGeometry, WindowProcessKernel};
use crate::custom_op::{InnerCall, RecordedInputs, exactly, record};

/// Custom op id of the process; inputs `[x]`, outputs `[windows]`.
const PROCESS_ID: &str = "burnacc_window_process";
/// Custom op id of the reverse; inputs `[windows]`, outputs `[y]`.
const REVERSE_ID: &str = "burnacc_window_process_reverse";

/// Which direction the recorded operation runs, with its geometry.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Process(WindowGeometry),
    Reverse(WindowGeometry),
}

impl<B: FusionBackend + WindowProcessKernel> InnerCall<B> for Kind {
    fn run(&self, inputs: &mut RecordedInputs<'_, B>) -> Vec<FloatTensor<B>> {
        match *self {
            Kind::Process(geometry) => vec![B::fused_window_process(inputs.float(), geometry)],
            Kind::Reverse(geometry) => {
                vec![B::fused_window_process_reverse(inputs.float(), geometry)]
            }
        }
    }
}

impl<B: FusionBackend + WindowProcessKernel> WindowProcessKernel for Fusion<B> {
    fn fused_window_process(x: FloatTensor<Self>, geometry: WindowGeometry) -> FloatTensor<Self> {
        let [batch, _, _, c] = x.shape.dims();
        let shape = Shape::new([
            batch * geometry.windows_per_image(),
            geometry.window_area(),
            c,
        ]);
        let out = vec![(shape, x.dtype)];
        let [windows] = exactly(record::<B, _>(
            PROCESS_ID,
            Kind::Process(geometry),
            vec![x],
            out,
        ));
        windows
    }

    fn fused_window_process_reverse(
        windows: FloatTensor<Self>,
        geometry: WindowGeometry,
    ) -> FloatTensor<Self> {
        let [count, _, c] = windows.shape.dims();
        let [h, w] = geometry.resolution;
        let batch = count / geometry.windows_per_image();
        let out = vec![(Shape::new([batch, h, w, c]), windows.dtype)];
        let [y] = exactly(record::<B, _>(
            REVERSE_ID,
            Kind::Reverse(geometry),
            vec![windows],
            out,
        ));
        y
    }
}
