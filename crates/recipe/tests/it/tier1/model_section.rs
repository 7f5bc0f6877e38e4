//! Tier 1: `[model]` reads the keys of the family `model.name` picks, names a key of another
//! family with the family it belongs to, and writes back what it read.

use burnacc_recipe::{
    BertKeys, FamilyKeys, HiddenActName, ModelFamilyName, ResNetKeys, SwinKeys, parse_recipe,
    recipe_toml,
};
use std::path::Path;

fn parse(text: &str, sets: &[&str]) -> Result<burnacc_recipe::Recipe, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_recipe(text, Path::new("bad.toml"), &sets).map_err(|e| e.to_string())
}

const SWIN: &str = "[model]\nname = \"swin-t\"\nembed_dim = 32\ndepths = [2, 2]\n";

#[test]
fn the_name_picks_the_family_and_its_keys() {
    let r = parse(SWIN, &[]).unwrap();
    assert_eq!(r.model.name.family(), ModelFamilyName::Swin);
    let keys = r.model.swin().expect("swin keys");
    assert_eq!(keys.embed_dim, Some(32));
    assert_eq!(keys.depths, Some(vec![2, 2]));
    assert!(r.model.resnet().is_none() && r.model.bert().is_none());

    let r = parse("", &[]).unwrap();
    let resnet = r.model.resnet().expect("resnet50 by default");
    assert_eq!((resnet.base_width, resnet.small_input_stem), (64, false));

    let r = parse(
        "[model]\nname = \"bert-base\"\ndropout = 0.2\n[data]\ndataset = \"rotten-tomatoes\"\n",
        &[],
    )
    .unwrap();
    assert_eq!(r.model.bert_dropout(), 0.2);
}

#[test]
fn a_key_of_another_family_is_named_with_its_family() {
    for (text, sets, key, family) in [
        (
            "",
            &["model.embed_dim=16"][..],
            "model.embed_dim",
            "Swin Transformers",
        ),
        (
            SWIN,
            &["model.base_width=32"][..],
            "model.base_width",
            "ResNets",
        ),
        (
            SWIN,
            &["model.small_input_stem=true"][..],
            "model.small_input_stem",
            "ResNets",
        ),
        // The first key in the family's order, whatever the file's order.
        (
            SWIN,
            &["model.name=resnet18"][..],
            "model.embed_dim",
            "Swin Transformers",
        ),
        (SWIN, &["model.dropout=0.1"][..], "model.dropout", "BERTs"),
    ] {
        let message = parse(text, sets).expect_err("refused");
        assert!(
            message.contains(&format!("`{key}`")) && message.contains(family),
            "{sets:?}: {message}"
        );
    }
    let message = parse(SWIN, &["model.embed_dims=16"]).expect_err("refused");
    assert!(
        message.contains("`model.embed_dims`") && message.contains("embed_dim"),
        "{message}"
    );
    let message = parse(SWIN, &["model.depths=\"two\""]).expect_err("refused");
    assert!(message.contains("`model.depths`"), "{message}");
}

#[test]
fn resnet_keys_at_their_defaults_still_read_on_other_families() {
    // What recipe.toml of a Swin run held before `[model]` had a section per family.
    let text = format!("{SWIN}base_width = 64\nsmall_input_stem = false\n");
    let r = parse(&text, &[]).unwrap();
    assert!(r.model.swin().is_some());
}

#[test]
fn the_recipe_written_back_reads_the_same_model() {
    for text in [
        SWIN,
        "[model]\nname = \"resnet18\"\nbase_width = 8\nsmall_input_stem = true\nnum_classes = 10\n",
    ] {
        let r = parse(text, &[]).unwrap();
        let written = recipe_toml(&r);
        let again = parse(&written, &[]).unwrap_or_else(|e| panic!("{written}\n{e}"));
        assert_eq!(again.model.name, r.model.name);
        assert_eq!(again.model.num_classes, r.model.num_classes);
        match (&again.model.family, &r.model.family) {
            (FamilyKeys::Swin(a), FamilyKeys::Swin(b)) => assert_eq!(a, b),
            (FamilyKeys::ResNet(a), FamilyKeys::ResNet(b)) => assert_eq!(a, b),
            other => panic!("families differ: {other:?}"),
        }
        // Only the family's own keys are written.
        let foreign = match r.model.family {
            FamilyKeys::Swin(_) => ["base_width", "hidden_act"],
            _ => ["embed_dim", "hidden_act"],
        };
        assert!(foreign.iter().all(|k| !written.contains(k)), "{written}");
    }
}

#[test]
fn the_listed_keys_of_each_family_are_its_fields() {
    let every_key_set = [
        (
            ModelFamilyName::ResNet,
            toml::Table::try_from(ResNetKeys::default()),
        ),
        (
            ModelFamilyName::Swin,
            toml::Table::try_from(SwinKeys {
                embed_dim: Some(1),
                depths: Some(vec![1]),
                num_heads: Some(vec![1]),
                window_size: Some(1),
                patch_size: Some(1),
                drop_path_rate: Some(0.0),
            }),
        ),
        (
            ModelFamilyName::Bert,
            toml::Table::try_from(BertKeys {
                hidden_act: Some(HiddenActName::Gelu),
                dropout: Some(0.0),
            }),
        ),
    ];
    for (family, table) in every_key_set {
        let mut fields: Vec<String> = table.unwrap().keys().cloned().collect();
        let mut listed: Vec<String> = FamilyKeys::keys_of(family)
            .iter()
            .map(|k| k.to_string())
            .collect();
        fields.sort();
        listed.sort();
        assert_eq!(listed, fields, "{family:?}");
    }
}
