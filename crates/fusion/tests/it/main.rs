//! burnacc-fusion's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod readings;
mod relative;
mod synced;

mod tier1 {
    mod elementwise_fuser;
}

mod tier2 {
    mod autodiff_kernels;
    mod batch_norm;
    mod bias_dropout_add;
    mod broadcast_binary;
    mod contiguous_copy;
    mod conv_backward;
    mod cube_acc;
    mod custom_op_alone;
    mod elementwise_fusion;
    mod elementwise_views;
    mod empty_inputs;
    mod gelu;
    mod kernel_support;
    mod layer_norm;
    mod linear;
    mod matmul_random;
    mod reshape_views;
    mod sum_chain;
    mod sum_chain_views;
    mod window_softmax;
}
