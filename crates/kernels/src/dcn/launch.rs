//! Host side of burnacc's deformable-convolution backward on Burn's CubeCL backend: the two
//! matrix products (Burn's, batched over the weight groups) around one launch of
//! [`deform_conv2d_backward_kernel`].

use burn::cubecl::features::AtomicUsage;
use burn::cubecl::ir::{ElemType, FloatKind, StorageType, Type};
use burn::tensor::ops::{DeformConv2dBackward, DeformConvOptions, FloatTensorOps};
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_cubecl::kernel::{cast, into_contiguous};
use burn_cubecl::ops::numeric::zeros_client;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::counters;
use super::kernel::{CasAdd, NativeAdd, deform_conv2d_backward_kernel};
use crate::cube_util::{elementwise_grid, empty_like};

/// The five gradients of `deform_conv2d(x, offset, weight, mask, bias, options)` from the
/// output gradient, on a CubeCL device (shapes in [`super`]; any float dtype, computed in f32
/// inside the kernel, the products in the dtype of `x`):
///
/// 1. `grad_columns[g] = weight[g]ᵀ · grad_out[g]` for each weight group `g`, one batched product;
/// 2. one kernel over (batch, offset group, tap, output position): offset and mask gradients,
///    the input gradient (atomic adds) and the modulated columns;
/// 3. `weight_grad[g] = grad_out[g] · columns[g]ᵀ`, one batched product; the bias gradient the
///    sum of `grad_out` over batch and positions.
pub fn deform_conv2d_backward_cube<R, F, I, BT>(
    x: CubeTensor<R>,
    offset: CubeTensor<R>,
    weight: CubeTensor<R>,
    mask: Option<CubeTensor<R>>,
    bias: Option<CubeTensor<R>>,
    grad_out: CubeTensor<R>,
    options: &DeformConvOptions<2>,
) -> DeformConv2dBackward<CubeBackend<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    type B<R, F, I, BT> = CubeBackend<R, F, I, BT>;
    let [n, c_in, h, w] = x.shape().dims();
    let [c_out, c_in_group, kh, kw] = weight.shape().dims();
    let [_, _, out_h, out_w] = grad_out.shape().dims();
    let groups = options.weight_groups;
    let (taps, cols) = (kh * kw, n * out_h * out_w);
    let dtype = x.dtype;

    // [groups, c_out / groups, N · Ho · Wo]: each group's output gradient as a matrix.
    let grad_out_t = B::<R, F, I, BT>::float_swap_dims(grad_out.clone(), 0, 1);
    let grad_out_t = B::<R, F, I, BT>::float_reshape(
        into_contiguous(grad_out_t),
        Shape::new([groups, c_out / groups, cols]),
    );
    let weight_t = B::<R, F, I, BT>::float_reshape(
        into_contiguous(weight.clone()),
        Shape::new([groups, c_out / groups, c_in_group * taps]),
    );
    let weight_t = B::<R, F, I, BT>::float_swap_dims(weight_t, 1, 2);
    let grad_columns = B::<R, F, I, BT>::float_matmul(weight_t, grad_out_t.clone());
    let grad_columns = into_contiguous(B::<R, F, I, BT>::float_reshape(
        grad_columns,
        Shape::new([c_in * taps, cols]),
    ));

    let x = into_contiguous(x);
    let offset = into_contiguous(offset);
    let has_mask = mask.is_some();
    let mask = match mask {
        Some(mask) => into_contiguous(mask),
        None => empty_like(&x, Shape::new([1]), dtype),
    };
    let grad_offset = empty_like(&offset, offset.shape(), dtype);
    let grad_mask = empty_like(&mask, mask.shape(), dtype);
    let columns = empty_like(&x, Shape::new([c_in * taps, cols]), dtype);
    let grad_x = zeros_client(
        x.client.clone(),
        x.device.clone(),
        Shape::new([n * c_in * h * w]),
        DType::F32,
    );
    let native_add = x
        .client
        .properties()
        .atomic_type_usage(Type::new(StorageType::Atomic(ElemType::Float(
            FloatKind::F32,
        ))))
        .contains(AtomicUsage::Add);
    let launch = if native_add {
        deform_conv2d_backward_kernel::launch::<NativeAdd, R>
    } else {
        deform_conv2d_backward_kernel::launch::<CasAdd, R>
    };
    let units = n * options.offset_groups * taps * out_h * out_w;
    if units > 0 {
        let (count, dim) = elementwise_grid(&x, units);
        launch(
            &x.client.clone(),
            count,
            dim,
            x.clone().into_tensor_arg(),
            offset.into_tensor_arg(),
            mask.into_tensor_arg(),
            grad_columns.into_tensor_arg(),
            grad_x.clone().into_tensor_arg(),
            grad_offset.clone().into_tensor_arg(),
            grad_mask.clone().into_tensor_arg(),
            columns.clone().into_tensor_arg(),
            options.stride[0],
            options.stride[1],
            options.dilation[0],
            options.dilation[1],
            options.padding[0] as f32,
            options.padding[1] as f32,
            options.offset_groups,
            kw,
            taps,
            has_mask,
            dtype.into(),
        );
        counters::BACKWARD.bump();
    }
    let x_grad = B::<R, F, I, BT>::float_reshape(cast(grad_x, dtype), Shape::new([n, c_in, h, w]));

    // [groups, N · Ho · Wo, c_in / groups · taps]: each group's columns, transposed.
    let columns_t =
        B::<R, F, I, BT>::float_reshape(columns, Shape::new([groups, c_in_group * taps, cols]));
    let columns_t = B::<R, F, I, BT>::float_swap_dims(columns_t, 1, 2);
    let weight_grad = B::<R, F, I, BT>::float_matmul(grad_out_t, columns_t);
    let weight_grad =
        B::<R, F, I, BT>::float_reshape(weight_grad, Shape::new([c_out, c_in_group, kh, kw]));

    let bias_grad = bias.map(|_| {
        let per_channel =
            B::<R, F, I, BT>::float_reshape(grad_out, Shape::new([n, c_out, out_h * out_w]));
        let summed = B::<R, F, I, BT>::float_sum_dim(per_channel, 2);
        let summed = B::<R, F, I, BT>::float_sum_dim(summed, 0);
        B::<R, F, I, BT>::float_reshape(summed, Shape::new([c_out]))
    });

    DeformConv2dBackward::new(
        x_grad,
        grad_offset,
        weight_grad,
        has_mask.then_some(grad_mask),
        bias_grad,
    )
}
