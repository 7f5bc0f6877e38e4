//! Tier 2: deformable convolution v1 and v2 against torchvision.
//!
//! `tests/fixtures/dcn.safetensors` (`scripts/record_dcn_fixtures.py`) holds four cases (v1;
//! v2; v2 strided with a 3×2 kernel, dilation, 2 weight groups and 2 offset groups; v2 dilated
//! with 2 offset groups), odd sizes, offsets of a few pixels (samples between pixels and
//! outside the image), and torchvision's `deform_conv2d` output and the gradients of
//! `sum(out · grad_out)` for x, offset, mask, weight and bias, computed in float64. Ours runs
//! in f32, on Flex and on wgpu (lavapipe, fused and eager), within 1e-4 of the largest
//! reference value.

use std::collections::HashMap;
use std::path::PathBuf;

use burn::backend::wgpu::WgpuDevice;
use burn::backend::{Autodiff, Flex, Wgpu, flex::FlexDevice};
use burn::module::Param;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2dConfig;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::{DeformConvOptions, ModuleOps};
use burn::tensor::{Distribution, Tensor, TensorData};
use burnacc_backend::Acc;
use burnacc_kernels::dcn::{
    DcnError, DcnKernel, DeformConv2dPackConfig, backward_launches, deform_conv2d,
};
use burnacc_tests::tolerance::PYTORCH_FIXTURE_F32;
use safetensors::SafeTensors;
use safetensors::tensor::Dtype;

const CASES: [&str; 4] = ["v1_basic", "v2_basic", "v2_strided", "v2_dilated"];
const ALL_GRADIENTS: [&str; 5] = ["x", "offset", "mask", "weight", "bias"];

struct Fixture {
    tensors: HashMap<String, (Vec<usize>, Vec<f64>)>,
    options: HashMap<String, DeformConvOptions<2>>,
}

impl Fixture {
    fn open() -> Self {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dcn.safetensors");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (record it with: python3 scripts/record_dcn_fixtures.py)",
                path.display()
            )
        });
        let (_, metadata) = SafeTensors::read_metadata(&bytes).unwrap();
        let metadata = metadata.metadata().clone().unwrap();
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let mut tensors = HashMap::new();
        for (key, view) in file.tensors() {
            let values: Vec<f64> = match view.dtype() {
                Dtype::F32 => view
                    .data()
                    .chunks_exact(4)
                    .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
                    .collect(),
                Dtype::F64 => view
                    .data()
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
                other => panic!("{key}: {other:?}"),
            };
            tensors.insert(key, (view.shape().to_vec(), values));
        }
        let options = CASES
            .iter()
            .map(|&case| {
                let v: Vec<usize> = metadata[case]
                    .split(',')
                    .map(|v| v.parse().unwrap())
                    .collect();
                let options =
                    DeformConvOptions::new([v[0], v[1]], [v[2], v[3]], [v[4], v[5]], v[6], v[7]);
                (case.to_owned(), options)
            })
            .collect();
        Fixture { tensors, options }
    }

    fn has(&self, key: &str) -> bool {
        self.tensors.contains_key(key)
    }

    fn tensor<B: Backend, const D: usize>(&self, key: &str, device: &B::Device) -> Tensor<B, D> {
        let (shape, values) = &self.tensors[key];
        let values: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        Tensor::from_data(TensorData::new(values, shape.clone()), device)
    }

    /// Max |ours − reference| / max |reference|.
    fn distance<B: Backend, const D: usize>(&self, key: &str, ours: Tensor<B, D>) -> f64 {
        let (shape, reference) = &self.tensors[key];
        assert_eq!(&ours.dims().to_vec(), shape, "{key}");
        let ours: Vec<f32> = ours.into_data().convert::<f32>().to_vec().unwrap();
        let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = ours
            .iter()
            .zip(reference)
            .fold(0.0f64, |m, (a, b)| m.max((f64::from(*a) - b).abs()));
        diff / scale
    }
}

/// Forward and the gradients `checked` (of x, offset, mask, weight, bias) of every case on
/// `B`.
fn matches_torchvision<B: AutodiffBackend + DcnKernel>(device: &B::Device, checked: &[&str]) {
    let fixture = Fixture::open();
    let mut failures = Vec::new();
    for case in CASES {
        let key = |name: &str| format!("{case}.{name}");
        let param = |name: &str| fixture.tensor::<B, 4>(&key(name), device).require_grad();
        let (x, offset, weight) = (param("x"), param("offset"), param("weight"));
        let mask = fixture.has(&key("mask")).then(|| param("mask"));
        let bias = fixture.tensor::<B, 1>(&key("bias"), device).require_grad();
        let out = deform_conv2d(
            x.clone(),
            offset.clone(),
            weight.clone(),
            mask.clone(),
            Some(bias.clone()),
            fixture.options[case].clone(),
        )
        .unwrap();
        let grad_out = fixture.tensor::<B, 4>(&key("grad_out"), device);
        let grads = (out.clone() * grad_out).sum().backward();
        let mut distances = vec![("out", fixture.distance(&key("out"), out))];
        for (name, tensor) in [("x", x), ("offset", offset), ("weight", weight)] {
            let grad = tensor.grad(&grads).expect("a gradient");
            distances.push((name, fixture.distance(&key(&format!("grad.{name}")), grad)));
        }
        if let Some(mask) = mask {
            let grad = mask.grad(&grads).expect("a mask gradient");
            distances.push(("mask", fixture.distance(&key("grad.mask"), grad)));
        }
        let grad = bias.grad(&grads).expect("a bias gradient");
        distances.push(("bias", fixture.distance(&key("grad.bias"), grad)));
        failures.extend(
            distances
                .into_iter()
                .filter(|&(name, d)| {
                    (name == "out" || checked.contains(&name)) && d > PYTORCH_FIXTURE_F32
                })
                .map(|(name, d)| format!("{case} {name}: {d:.2e}")),
        );
    }
    assert!(failures.is_empty(), "from torchvision: {failures:#?}");
}

#[test]
fn forward_and_gradients_match_torchvision_on_flex() {
    matches_torchvision::<Autodiff<Flex>>(&FlexDevice, &ALL_GRADIENTS);
}

type Cube = burn_cubecl::CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>;

/// Eager and fused, and through burnacc's `Acc`: the gradients come from burnacc's backward
/// kernel (its counter rises).
#[test]
fn forward_and_gradients_match_torchvision_on_wgpu() {
    let device = WgpuDevice::default();
    let before = backward_launches();
    matches_torchvision::<Autodiff<Wgpu>>(&device, &ALL_GRADIENTS);
    matches_torchvision::<Autodiff<Cube>>(&device, &ALL_GRADIENTS);
    matches_torchvision::<Acc<Autodiff<Wgpu>>>(&device, &ALL_GRADIENTS);
    assert!(
        backward_launches() > before,
        "burnacc's DCN backward never ran"
    );
}

/// `max |a − b| / max |b|` of two tensors of `Cube`.
fn relative(a: Tensor<Cube, 4>, b: Tensor<Cube, 4>) -> f64 {
    let a: Vec<f32> = a.into_data().to_vec().unwrap();
    let b: Vec<f32> = b.into_data().to_vec().unwrap();
    let scale = b
        .iter()
        .fold(0f32, |m, v| m.max(v.abs()))
        .max(f32::MIN_POSITIVE);
    let diff = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    f64::from(diff / scale)
}

/// burnacc's backward kernel against Burn's (patched) backward on the same device: odd sizes,
/// a 3×2 kernel with stride, padding and dilation, the four forms of mask and bias, weight
/// and offset groups, a strided (non-contiguous) input, offsets reaching outside the image.
#[test]
fn burnacc_backward_equals_burns_backward_on_wgpu() {
    let device = WgpuDevice::default();
    let forms = [
        (false, false, 1, 1),
        (true, false, 1, 2),
        (false, true, 2, 1),
        (true, true, 2, 2),
    ];
    let (n, c_in, c_out, h, w, kh, kw) = (2, 4, 6, 7, 9, 3, 2);
    for (has_mask, has_bias, weight_groups, offset_groups) in forms {
        let options = DeformConvOptions::new([1, 2], [1, 0], [2, 1], weight_groups, offset_groups);
        let [ho, wo] = [5, 4];
        let uniform = |dims: [usize; 4], lo: f64, hi: f64| {
            Tensor::<Cube, 4>::random(dims, Distribution::Uniform(lo, hi), &device)
        };
        // Stored as [n, c, w, h]: the kernel's input is a transposed view.
        let x = uniform([n, c_in, w, h], -1.0, 1.0).swap_dims(2, 3);
        let offset = uniform([n, 2 * offset_groups * kh * kw, ho, wo], -2.5, 2.5);
        let weight = uniform([c_out, c_in / weight_groups, kh, kw], -1.0, 1.0);
        let mask = has_mask.then(|| uniform([n, offset_groups * kh * kw, ho, wo], 0.0, 1.0));
        let bias =
            has_bias.then(|| Tensor::<Cube, 1>::random([c_out], Distribution::Default, &device));
        let grad_out = uniform([n, c_out, ho, wo], -1.0, 1.0);
        let p = |t: &Tensor<Cube, 4>| t.clone().into_primitive().tensor();
        let run = |ours: bool| {
            let args = (
                p(&x),
                p(&offset),
                p(&weight),
                mask.as_ref().map(p),
                bias.clone().map(|b| b.into_primitive().tensor()),
                p(&grad_out),
                options.clone(),
            );
            let g = if ours {
                Cube::dcn_backward(args.0, args.1, args.2, args.3, args.4, args.5, args.6)
            } else {
                Cube::deform_conv2d_backward(args.0, args.1, args.2, args.3, args.4, args.5, args.6)
            };
            let t = |prim| Tensor::<Cube, 4>::from_primitive(TensorPrimitive::Float(prim));
            let t1 = |prim| Tensor::<Cube, 1>::from_primitive(TensorPrimitive::Float(prim));
            (
                [t(g.x_grad), t(g.offset_grad), t(g.weight_grad)],
                g.mask_grad.map(t),
                g.bias_grad.map(t1),
            )
        };
        let before = backward_launches();
        let (ours, our_mask, our_bias) = run(true);
        assert!(backward_launches() > before);
        let (burns, burn_mask, burn_bias) = run(false);
        let form =
            format!("mask {has_mask}, bias {has_bias}, groups {weight_groups}/{offset_groups}");
        for (name, (a, b)) in ["x", "offset", "weight"]
            .into_iter()
            .zip(ours.into_iter().zip(burns))
        {
            let d = relative(a, b);
            assert!(d <= 1e-5, "{form}: {name} gradient {d:.2e} from Burn's");
        }
        assert_eq!(our_mask.is_some(), has_mask);
        if let (Some(a), Some(b)) = (our_mask, burn_mask) {
            let d = relative(a, b);
            assert!(d <= 1e-5, "{form}: mask gradient {d:.2e} from Burn's");
        }
        assert_eq!(our_bias.is_some(), has_bias);
        if let (Some(a), Some(b)) = (our_bias, burn_bias) {
            let d = relative(a.unsqueeze(), b.unsqueeze());
            assert!(d <= 1e-6, "{form}: bias gradient {d:.2e} from Burn's");
        }
    }
}

#[test]
fn bad_shapes_and_options_are_refused_naming_the_argument() {
    let device = FlexDevice;
    let zeros = |shape: [usize; 4]| Tensor::<Flex, 4>::zeros(shape, &device);
    let options = |wg, og| DeformConvOptions::new([1, 1], [1, 1], [1, 1], wg, og);
    let call = |offset: [usize; 4], mask: Option<[usize; 4]>, bias: usize, options| {
        deform_conv2d(
            zeros([2, 4, 5, 6]),
            zeros(offset),
            zeros([3, 4, 3, 3]),
            mask.map(zeros),
            Some(Tensor::<Flex, 1>::zeros([bias], &device)),
            options,
        )
    };
    assert!(call([2, 18, 5, 6], Some([2, 9, 5, 6]), 3, options(1, 1)).is_ok());
    let err = call([2, 17, 5, 6], None, 3, options(1, 1)).unwrap_err();
    assert!(
        matches!(err, DcnError::Shape { name: "offset", .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("2 · offset_groups 1 · 3 · 3"),
        "{err}"
    );
    let err = call([2, 18, 5, 6], None, 3, options(1, 2)).unwrap_err();
    assert!(
        matches!(err, DcnError::Shape { name: "offset", .. }),
        "{err}"
    );
    let err = call([2, 18, 5, 6], Some([2, 9, 4, 6]), 3, options(1, 1)).unwrap_err();
    assert!(matches!(err, DcnError::Shape { name: "mask", .. }), "{err}");
    let err = call([2, 18, 5, 6], None, 4, options(1, 1)).unwrap_err();
    assert!(matches!(err, DcnError::Shape { name: "bias", .. }), "{err}");
    let err = call([2, 18, 5, 6], None, 3, options(3, 1)).unwrap_err();
    assert!(
        matches!(
            err,
            DcnError::Option {
                name: "weight_groups",
                ..
            }
        ),
        "{err}"
    );
    let err = call([2, 36, 5, 6], None, 3, options(1, 3)).unwrap_err();
    assert!(
        matches!(
            err,
            DcnError::Option {
                name: "offset_groups",
                ..
            }
        ),
        "{err}"
    );
    let err = call(
        [2, 18, 5, 6],
        None,
        3,
        DeformConvOptions {
            stride: [0, 1],
            ..options(1, 1)
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, DcnError::Option { name: "stride", .. }),
        "{err}"
    );
}

#[test]
fn fresh_pack_layers_are_plain_convolutions() {
    // mmcv starts conv_offset at zero: offsets 0 (and, for v2, a mask of sigmoid(0) = 1/2).
    let device = FlexDevice;
    Flex::seed(&device, 3);
    let config = DeformConv2dPackConfig::new([4, 6], [3, 3])
        .with_stride([2, 1])
        .with_padding([1, 1])
        .with_deform_groups(2);
    let x = Tensor::<Flex, 4>::random([2, 4, 9, 8], Distribution::Normal(0.0, 1.0), &device);
    let v1 = config.init::<Flex>(&device);
    let mut conv = Conv2dConfig::new([4, 6], [3, 3])
        .with_stride([2, 1])
        .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
        .init::<Flex>(&device);
    // Parameters are drawn lazily: the convolution gets the values the layer drew.
    conv.weight = Param::from_tensor(v1.weight.val());
    conv.bias = v1.bias.as_ref().map(|b| Param::from_tensor(b.val()));
    let plain = conv.forward(x.clone());
    let ours = v1.forward(x.clone()).unwrap();
    let scale = plain.clone().abs().max().into_scalar();
    let diff = ours.sub(plain).abs().max().into_scalar();
    assert!(diff <= 1e-6 * scale, "v1 vs conv2d: {diff} of {scale}");
    let v2 = config.init_modulated::<Flex>(&device);
    conv.weight = Param::from_tensor(v2.weight.val());
    conv.bias = v2.bias.as_ref().map(|b| Param::from_tensor(b.val()));
    // The mask halves every sample, and the bias is zero: half the convolution.
    let expected = conv.forward(x.clone()).mul_scalar(0.5);
    let scale = expected.clone().abs().max().into_scalar();
    let diff = v2
        .forward(x)
        .unwrap()
        .sub(expected)
        .abs()
        .max()
        .into_scalar();
    assert!(diff <= 1e-6 * scale, "v2 vs conv2d / 2: {diff} of {scale}");
    assert_eq!(v2.conv_offset.weight.dims(), [3 * 2 * 9, 4, 3, 3]);
    assert_eq!(v1.conv_offset.weight.dims(), [2 * 2 * 9, 4, 3, 3]);
}
