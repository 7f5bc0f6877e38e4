//! The activations and their derivatives as `#[cube]` functions on f32 vectors, shared by every
//! GELU kernel. The kernels load storage values, widen them to f32, call these, and narrow the
//! result back, so the maths is written once and always runs in f32.
//!
//! - QuickGELU (Hendrycks & Gimpel 2016, §2; the `QuickGELU` of OpenAI CLIP):
//!   `q(x) = x · s`, `s = sigmoid(1.702 x)`, `q'(x) = s + 1.702 x s (1 − s)`.
//! - Exact GELU (`torch.nn.functional.gelu` with `approximate="none"`,
//!   `burn::tensor::activation::gelu`): `g(z) = z Φ(z)`, `Φ(z) = ½ (1 + erf(z / √2))`,
//!   `g'(z) = Φ(z) + z φ(z)`, `φ(z) = exp(−z² / 2) / √(2π)`.
//!
//! `erf` is CubeCL's: the device's native one where it has one (CUDA), else CubeCL's polyfill
//! (WGSL/SPIR-V), Abramowitz & Stegun 7.1.26 with an absolute error below 1.5e-7, which is
//! below f32's rounding of `Φ` near 1.

use burn::cubecl;
use cubecl::prelude::*;

/// The QuickGELU slope: `sigmoid(1.702 x)` approximates `Φ(x)`.
const QUICK_SLOPE: f32 = 1.702;
/// `1 / √2`.
const FRAC_1_SQRT_2: f32 = core::f32::consts::FRAC_1_SQRT_2;
/// `1 / √(2π)`.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// `sigmoid(1.702 x)`. `exp` overflowing to `+inf` for very negative `x` gives exactly 0, and
/// underflowing to 0 for very positive `x` gives exactly 1, so no clamping is needed.
#[cube]
fn quick_sigmoid<N: Size>(x: Vector<f32, N>) -> Vector<f32, N> {
    let one = Vector::new(f32::new(1.0));
    one / (one + (x * Vector::new(f32::new(-QUICK_SLOPE))).exp())
}

/// QuickGELU: `x · sigmoid(1.702 x)`.
#[cube]
pub(crate) fn quick_gelu<N: Size>(x: Vector<f32, N>) -> Vector<f32, N> {
    x * quick_sigmoid::<N>(x)
}

/// Derivative of QuickGELU: `s + 1.702 x s (1 − s)`, `s = sigmoid(1.702 x)`.
#[cube]
pub(crate) fn quick_gelu_grad<N: Size>(x: Vector<f32, N>) -> Vector<f32, N> {
    let s = quick_sigmoid::<N>(x);
    let one = Vector::new(f32::new(1.0));
    s + Vector::new(f32::new(QUICK_SLOPE)) * x * s * (one - s)
}

/// Standard normal CDF `Φ(z) = ½ (1 + erf(z / √2))`.
#[cube]
fn normal_cdf<N: Size>(z: Vector<f32, N>) -> Vector<f32, N> {
    let half = Vector::new(f32::new(0.5));
    let one = Vector::new(f32::new(1.0));
    half * (one + (z * Vector::new(f32::new(FRAC_1_SQRT_2))).erf())
}

/// Exact GELU: `z Φ(z)`.
#[cube]
pub(crate) fn gelu<N: Size>(z: Vector<f32, N>) -> Vector<f32, N> {
    z * normal_cdf::<N>(z)
}

/// Derivative of the exact GELU: `Φ(z) + z φ(z)`.
#[cube]
pub(crate) fn gelu_grad<N: Size>(z: Vector<f32, N>) -> Vector<f32, N> {
    let pdf = (z * z * Vector::new(f32::new(-0.5))).exp() * Vector::new(f32::new(FRAC_1_SQRT_2PI));
    normal_cdf::<N>(z) + z * pdf
}
