//! Unit checks of `burnacc_models::params` through its public API.

use burnacc_models::params::torch_key;

#[test]
fn torch_key_renames_norm_affine_parameters_only() {
    assert_eq!(torch_key("bn1.gamma"), "bn1.weight");
    assert_eq!(
        torch_key("layer1.0.downsample.1.beta"),
        "layer1.0.downsample.1.bias"
    );
    assert_eq!(
        torch_key("layer1.0.bn1.running_var"),
        "layer1.0.bn1.running_var"
    );
    assert_eq!(torch_key("fc.weight"), "fc.weight");
    assert_eq!(torch_key("gamma"), "weight");
}
