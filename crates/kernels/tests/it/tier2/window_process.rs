//! The fused window processing (CubeCL on wgpu, through `Fusion` and `Autodiff`) against the
//! plain-Burn reference on `NdArray<f64>`, and the reference against a direct host loop that
//! spells out timm's `torch.roll` + `F.pad` + `window_partition`.
//!
//! The maps only move values, so every comparison is exact, in f32 and in f16.

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};
use burnacc_kernels::window_process::{
    WindowGeometry, window_process, window_process_launches, window_process_reference,
    window_process_reverse, window_process_reverse_launches, window_process_reverse_reference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
/// The default `burn::backend::Wgpu`: `Fusion<CubeBackend<WgpuRuntime, f32, i32, u32>>`.
type Wgpu = burn::backend::Wgpu;
type Ref = NdArray<f64>;

/// One geometry with a batch and a channel count.
struct Case {
    batch: usize,
    channels: usize,
    geometry: WindowGeometry,
}

const fn case(
    batch: usize,
    resolution: [usize; 2],
    window: [usize; 2],
    shift: [usize; 2],
    channels: usize,
) -> Case {
    Case {
        batch,
        channels,
        geometry: WindowGeometry {
            resolution,
            window,
            shift,
        },
    }
}

/// Shifted and not, padded and not, odd window counts and odd channel counts (vectors of 1).
const CASES: [Case; 6] = [
    case(2, [14, 14], [7, 7], [3, 3], 8),
    case(1, [14, 14], [7, 7], [0, 0], 12),
    case(2, [10, 13], [4, 5], [2, 1], 6),
    case(1, [7, 7], [7, 7], [0, 0], 3),
    case(3, [9, 9], [3, 3], [1, 2], 5),
    case(1, [21, 7], [7, 7], [3, 0], 16),
];

impl Case {
    fn dims(&self) -> [usize; 4] {
        let [h, w] = self.geometry.resolution;
        [self.batch, h, w, self.channels]
    }

    fn window_dims(&self) -> [usize; 3] {
        [
            self.batch * self.geometry.windows_per_image(),
            self.geometry.window_area(),
            self.channels,
        ]
    }

    fn values(&self, len: usize, seed: u64) -> Vec<f32> {
        let mut rng = StdRng::seed_from_u64(seed);
        // Multiples of 1/8 in [-4, 4]: exact in f16, so f16 runs compare exactly too.
        (0..len)
            .map(|_| rng.random_range(-32i32..=32) as f32 / 8.0)
            .collect()
    }

    fn tensor<B: Backend, const D: usize>(
        &self,
        values: &[f32],
        dims: [usize; D],
        device: &B::Device,
    ) -> Tensor<B, D> {
        Tensor::from_data(TensorData::new(values.to_vec(), dims), device)
    }

    /// timm's process spelled out on the host: `torch.roll(x, (−sh, −sw), (1, 2))`, then
    /// `F.pad` with zeros at the bottom and right, then `window_partition`.
    fn timm_process(&self, x: &[f32]) -> Vec<f32> {
        let [batch, h, w, c] = self.dims();
        let [wh, ww] = self.geometry.window;
        let [nh, nw] = self.geometry.windows();
        let [sh, sw] = self.geometry.shift;
        let rolled = |b: usize, y: usize, x_: usize, ch: usize| {
            x[((b * h + (y + sh) % h) * w + (x_ + sw) % w) * c + ch]
        };
        let (hp, wp) = (nh * wh, nw * ww);
        let padded = |b: usize, y: usize, x_: usize, ch: usize| {
            if y < h && x_ < w {
                rolled(b, y, x_, ch)
            } else {
                0.0
            }
        };
        let _ = (hp, wp);
        let mut out = Vec::new();
        for b in 0..batch {
            for wy in 0..nh {
                for wx in 0..nw {
                    for ty in 0..wh {
                        for tx in 0..ww {
                            for ch in 0..c {
                                out.push(padded(b, wy * wh + ty, wx * ww + tx, ch));
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

fn to_f32(data: TensorData) -> Vec<f32> {
    data.iter::<f32>().collect()
}

/// The reference (NdArray f64) equals timm's construction, and reverse undoes process.
#[test]
fn reference_matches_timm_construction() {
    let device = Default::default();
    for (i, case) in CASES.iter().enumerate() {
        let xv = case.values(case.dims().iter().product(), i as u64);
        let x = case.tensor::<Ref, 4>(&xv, case.dims(), &device);
        let windows = window_process_reference(x, case.geometry);
        assert_eq!(windows.dims(), case.window_dims());
        let windows_v = to_f32(windows.clone().into_data());
        assert_eq!(
            windows_v,
            case.timm_process(&xv),
            "{:?}: reference process",
            case.geometry
        );
        let back = window_process_reverse_reference(windows, case.geometry);
        assert_eq!(
            to_f32(back.into_data()),
            xv,
            "{:?}: reverse ∘ process",
            case.geometry
        );
    }
}

/// Both fused gathers on `CubeBackend` with f32 storage equal the reference exactly; the
/// counters move.
#[test]
fn cube_f32_matches_reference() {
    check_cube(DType::F32);
}

/// The same with f16 storage: values are moved, so f16 is exact as well.
#[test]
fn cube_f16_matches_reference() {
    if !Cube::supports_dtype(&WgpuDevice::default(), DType::F16) {
        println!("f16 storage: not supported by this device, skipped");
        return;
    }
    check_cube(DType::F16);
}

fn check_cube(dtype: DType) {
    type B = Cube;
    let device = WgpuDevice::default();
    let cpu = Default::default();
    for (i, case) in CASES.iter().enumerate() {
        let xv = case.values(case.dims().iter().product(), 100 + i as u64);
        let gv = case.values(case.window_dims().iter().product(), 200 + i as u64);
        let before = (window_process_launches(), window_process_reverse_launches());

        let x = case.tensor::<B, 4>(&xv, case.dims(), &device).cast(dtype);
        let v = case
            .tensor::<B, 3>(&gv, case.window_dims(), &device)
            .cast(dtype);
        let windows = window_process(x, case.geometry);
        let merged = window_process_reverse(v, case.geometry);
        assert_eq!((windows.dtype(), merged.dtype()), (dtype, dtype));
        let (windows, merged) = (
            to_f32(windows.cast(DType::F32).into_data()),
            to_f32(merged.cast(DType::F32).into_data()),
        );
        assert!(
            window_process_launches() > before.0,
            "process did not launch"
        );
        assert!(
            window_process_reverse_launches() > before.1,
            "reverse did not launch"
        );

        let expected_windows =
            window_process_reference(case.tensor::<Ref, 4>(&xv, case.dims(), &cpu), case.geometry);
        let expected_merged = window_process_reverse_reference(
            case.tensor::<Ref, 3>(&gv, case.window_dims(), &cpu),
            case.geometry,
        );
        assert_eq!(
            windows,
            to_f32(expected_windows.into_data()),
            "{:?}",
            case.geometry
        );
        assert_eq!(
            merged,
            to_f32(expected_merged.into_data()),
            "{:?}",
            case.geometry
        );
    }
}

/// Through `Autodiff<Wgpu>` (fusion custom ops): with `loss = Σ process(x) ⊙ g`, the gradient
/// of `x` is `reverse(g)` (padding's gradient dropped), and with `loss = Σ reverse(v) ⊙ h`
/// the gradient of `v` is `process(h)`; both equal `Autodiff<NdArray<f64>>` through the
/// reference (whose gradient is Burn's own `select` backward).
#[test]
fn autodiff_fusion_gradients_match_reference() {
    type Ad = Autodiff<Wgpu>;
    type AdRef = Autodiff<Ref>;
    let device = WgpuDevice::default();
    let cpu = Default::default();
    for (i, case) in CASES.iter().enumerate().take(3) {
        let xv = case.values(case.dims().iter().product(), 300 + i as u64);
        let gv = case.values(case.window_dims().iter().product(), 400 + i as u64);
        let before = (window_process_launches(), window_process_reverse_launches());

        let x = case
            .tensor::<Ad, 4>(&xv, case.dims(), &device)
            .require_grad();
        let g = case.tensor::<Ad, 3>(&gv, case.window_dims(), &device);
        let windows = window_process(x.clone(), case.geometry);
        let merged = window_process_reverse(windows.clone() * g.clone(), case.geometry);
        let grads = (merged * x.clone()).sum().backward();
        let dx = to_f32(x.grad(&grads).expect("x is tracked").into_data());
        assert!(
            window_process_launches() >= before.0 + 2,
            "process: forward and backward"
        );
        assert!(
            window_process_reverse_launches() >= before.1 + 2,
            "reverse: forward and backward"
        );

        let rx = case
            .tensor::<AdRef, 4>(&xv, case.dims(), &cpu)
            .require_grad();
        let rg = case.tensor::<AdRef, 3>(&gv, case.window_dims(), &cpu);
        let rwindows = window_process_reference(rx.clone(), case.geometry);
        let rmerged = window_process_reverse_reference(rwindows * rg, case.geometry);
        let rgrads = (rmerged * rx.clone()).sum().backward();
        let rdx = to_f32(rx.grad(&rgrads).expect("x is tracked").into_data());
        assert_eq!(dx, rdx, "{:?}", case.geometry);
    }
}
