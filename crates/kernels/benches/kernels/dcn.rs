//! Deformable convolution v2's backward: burnacc's ([`DcnKernel::dcn_backward`], one kernel
//! over output positions between two batched products on CubeCL devices) against Burn's own
//! (`deform_conv2d_backward`: a product per weight group, the offset-and-mask kernel, the
//! input-gradient kernel and a fresh im2col for the weight gradient), on the same eager
//! backend, with the forward pass timed alongside for scale. On the CPU both are Burn's.

use burn::tensor::ops::{DeformConvOptions, FloatTensor};
use burn::tensor::{Distribution, Tensor};
use burnacc_kernels::dcn::DcnKernel;

use crate::timing::{Sync, Timer};

/// Inputs of one DCNv2 layer: `[n, c, size, size]` in and out, 3×3, padding 1, one offset
/// group, with mask and bias.
struct Layer<B: DcnKernel> {
    x: FloatTensor<B>,
    offset: FloatTensor<B>,
    weight: FloatTensor<B>,
    mask: FloatTensor<B>,
    bias: FloatTensor<B>,
    grad_out: FloatTensor<B>,
}

impl<B: DcnKernel> Layer<B> {
    fn new(n: usize, c: usize, size: usize, device: &B::Device) -> Self {
        let t = |dims: [usize; 4], lo: f64, hi: f64| {
            Tensor::<B, 4>::random(dims, Distribution::Uniform(lo, hi), device)
                .into_primitive()
                .tensor()
        };
        Self {
            x: t([n, c, size, size], -1.0, 1.0),
            offset: t([n, 18, size, size], -2.0, 2.0),
            weight: t([c, c, 3, 3], -0.1, 0.1),
            mask: t([n, 9, size, size], 0.0, 1.0),
            bias: Tensor::<B, 1>::zeros([c], device).into_primitive().tensor(),
            grad_out: t([n, c, size, size], -1.0, 1.0),
        }
    }
}

fn options() -> DeformConvOptions<2> {
    DeformConvOptions::new([1, 1], [1, 1], [1, 1], 1, 1)
}

/// Prints one table: forward, Burn's backward and burnacc's, per shape.
pub fn bench<B: DcnKernel>(quick: bool, timer: &Timer, device: &B::Device) {
    let shapes: &[(usize, usize, usize)] = if quick {
        &[(1, 32, 24), (2, 64, 28)]
    } else {
        &[(2, 64, 56), (8, 256, 28)]
    };
    println!();
    println!(
        "| DCNv2 3×3, mask and bias | [n, c, h, w] | forward ms | Burn backward ms | burnacc backward ms | speed-up |"
    );
    println!("|---|---|--:|--:|--:|--:|");
    for &(n, c, size) in shapes {
        let l = Layer::<B>::new(n, c, size, device);
        let forward = timer.time::<B, _>(device, Sync::Batched, 0, || {
            B::deform_conv2d(
                l.x.clone(),
                l.offset.clone(),
                l.weight.clone(),
                Some(l.mask.clone()),
                Some(l.bias.clone()),
                options(),
            )
        });
        let backward = |ours: bool| {
            timer.time::<B, _>(device, Sync::Batched, 0, || {
                let args = (
                    l.x.clone(),
                    l.offset.clone(),
                    l.weight.clone(),
                    Some(l.mask.clone()),
                    Some(l.bias.clone()),
                    l.grad_out.clone(),
                    options(),
                );
                let g = if ours {
                    B::dcn_backward(args.0, args.1, args.2, args.3, args.4, args.5, args.6)
                } else {
                    B::deform_conv2d_backward(
                        args.0, args.1, args.2, args.3, args.4, args.5, args.6,
                    )
                };
                (
                    g.x_grad,
                    g.offset_grad,
                    g.weight_grad,
                    g.mask_grad,
                    g.bias_grad,
                )
            })
        };
        let (burn, ours) = (backward(false), backward(true));
        println!(
            "| | [{n}, {c}, {size}, {size}] | {:.2} | {:.2} | {:.2} | {:.2}× |",
            forward * 1e3,
            burn * 1e3,
            ours * 1e3,
            burn / ours
        );
    }
}
