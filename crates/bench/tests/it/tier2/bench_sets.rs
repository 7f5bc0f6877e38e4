//! Unit checks of `burnacc_bench` through its public API.

use burnacc_bench::sets_for;
use std::path::Path;

#[test]
fn scoped_overrides_reach_their_recipe_only() {
    let sets: Vec<String> = [
        "backend.device=cuda:0",
        "bert_base:train.batch_size=64",
        "resnet50:data.image_size=160",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        sets_for(&sets, Path::new("configs/bench/bert_base.toml")),
        ["backend.device=cuda:0", "train.batch_size=64"]
    );
    assert_eq!(
        sets_for(&sets, Path::new("resnet50.toml")),
        ["backend.device=cuda:0", "data.image_size=160"]
    );
}
