//! [`MultiTensorOptim`] for Burn's backends: the CubeCL kernels for [`CubeBackend`], the fused
//! CPU loop for Flex, the reference (the trait's provided methods) for NdArray.

use burn::backend::flex::FlexTensor;
use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::backend::{Flex, NdArray};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::MultiTensorOptim;
use super::cpu::{all_f32, check_shapes, multi_tensor_adam_flex, multi_tensor_sgd_flex};
use super::group::{AdamGroup, AdamHyper, AdamUpdate, SgdGroup, SgdHyper, SgdUpdate};
use super::launch::{multi_tensor_adam_cube, multi_tensor_sgd_cube};
use super::reference::{adam_group_reference, sgd_group_reference};

impl<R, F, I, BT> MultiTensorOptim for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<CubeTensor<R>>,
    ) -> AdamUpdate<Self> {
        multi_tensor_adam_cube(group, hyper, found_inf)
    }

    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<CubeTensor<R>>,
    ) -> SgdUpdate<Self> {
        multi_tensor_sgd_cube(group, hyper, found_inf)
    }
}

/// The fused CPU loop for f32 groups (master weights); the reference for any other dtype.
impl MultiTensorOptim for Flex {
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<FlexTensor>,
    ) -> AdamUpdate<Self> {
        const WHAT: &str = "multi_tensor_adam";
        group.len();
        check_shapes(WHAT, "grads", &group.params, &group.grads);
        check_shapes(WHAT, "exp_avg", &group.params, &group.exp_avg);
        check_shapes(WHAT, "exp_avg_sq", &group.params, &group.exp_avg_sq);
        let tensors = [
            &group.params,
            &group.grads,
            &group.exp_avg,
            &group.exp_avg_sq,
        ];
        if all_f32(tensors.into_iter().flatten()) {
            multi_tensor_adam_flex(group, hyper, found_inf)
        } else {
            adam_group_reference(group, hyper, found_inf)
        }
    }

    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<FlexTensor>,
    ) -> SgdUpdate<Self> {
        const WHAT: &str = "multi_tensor_sgd";
        group.len();
        check_shapes(WHAT, "grads", &group.params, &group.grads);
        if !group.momentum_buffer.is_empty() {
            check_shapes(
                WHAT,
                "momentum_buffer",
                &group.params,
                &group.momentum_buffer,
            );
        }
        let tensors = [&group.params, &group.grads, &group.momentum_buffer];
        if all_f32(tensors.into_iter().flatten()) {
            multi_tensor_sgd_flex(group, hyper, found_inf)
        } else {
            sgd_group_reference(group, hyper, found_inf)
        }
    }
}

/// Reference path: NdArray (the f64 reference backend of the tests).
impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> MultiTensorOptim
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
