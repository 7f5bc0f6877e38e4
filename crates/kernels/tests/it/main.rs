//! burnacc-kernels's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod common;
mod tier2 {
    mod batch_norm;
    mod bias_dropout_add;
    mod bias_dropout_add_autodiff;
    mod bias_dropout_add_seed;
    mod dcn;
    mod gelu;
    mod gelu_fusion;
    mod layer_norm;
    mod layer_norm_autodiff;
    mod layer_norm_fusion;
    mod multi_apply;
    mod multi_tensor_optim;
    mod nms;
    mod softmax;
    mod swin_attention;
    mod window_process;
}
