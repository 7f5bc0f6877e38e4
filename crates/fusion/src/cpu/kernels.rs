//! burnacc's fused kernels on `CpuFlex`: Flex's implementations (the plain-Burn references,
//! and the fused multi-threaded optimizer loops), on the same tensors.
//!
//! Through `Fusion<CpuFlex>` each kernel call is one recorded custom operation
//! (`burnacc_kernels::custom_op`), as on CubeCL devices.

use super::CpuFlex;
use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burnacc_kernels::bias_dropout_add::BiasDropoutAddKernel;
use burnacc_kernels::gelu::GeluKernel;
use burnacc_kernels::layer_norm::LayerNormKernel;
use burnacc_kernels::optim::{
    AdamGroup, AdamHyper, AdamUpdate, MultiTensorOptim, SgdGroup, SgdHyper, SgdUpdate,
};
use burnacc_kernels::swin_attention::SwinAttentionKernel;
use burnacc_kernels::window_process::WindowProcessKernel;

impl LayerNormKernel for CpuFlex {}
impl GeluKernel for CpuFlex {}
impl BiasDropoutAddKernel for CpuFlex {}
impl WindowProcessKernel for CpuFlex {}
impl SwinAttentionKernel for CpuFlex {}

/// Flex's fused loops: `CpuFlex` and Flex share their tensors, so the groups move across.
impl MultiTensorOptim for CpuFlex {
    fn multi_tensor_adam(
        group: AdamGroup<Self>,
        hyper: AdamHyper,
        found_inf: Option<FlexTensor>,
    ) -> AdamUpdate<Self> {
        let group = AdamGroup::<Flex> {
            params: group.params,
            grads: group.grads,
            exp_avg: group.exp_avg,
            exp_avg_sq: group.exp_avg_sq,
            step_size: group.step_size,
            bc2_sqrt: group.bc2_sqrt,
        };
        let update = Flex::multi_tensor_adam(group, hyper, found_inf);
        AdamUpdate {
            params: update.params,
            exp_avg: update.exp_avg,
            exp_avg_sq: update.exp_avg_sq,
        }
    }

    fn multi_tensor_sgd(
        group: SgdGroup<Self>,
        hyper: SgdHyper,
        found_inf: Option<FlexTensor>,
    ) -> SgdUpdate<Self> {
        let group = SgdGroup::<Flex> {
            params: group.params,
            grads: group.grads,
            momentum_buffer: group.momentum_buffer,
            first: group.first,
        };
        let update = Flex::multi_tensor_sgd(group, hyper, found_inf);
        SgdUpdate {
            params: update.params,
            momentum_buffer: update.momentum_buffer,
        }
    }
}
