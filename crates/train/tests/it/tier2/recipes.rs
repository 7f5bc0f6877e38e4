//! Tier 2: recipes as `train` reads them: the shipped recipes pass the model checks too, the
//! loss scaler a recipe describes has PyTorch's defaults, and the binary refuses bad recipes,
//! and devices this build or machine lacks, before any work.

use burnacc_amp::scaler::GradScalerConfig;
use burnacc_train::precision::scaler_config;
use burnacc_train::recipe::{AmpSection, DeviceSpec, Mode, parse_recipe};
use std::path::{Path, PathBuf};
use std::process::Command;

fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

#[test]
fn every_shipped_recipe_passes_the_model_checks() {
    let mut seen = 0;
    for dir in [configs_dir(), configs_dir().join("bench")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                parse_recipe(&text, &path, &[]).unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
    }
    assert!(
        seen >= 7,
        "expected the shipped recipes in configs/, found {seen}"
    );
}

#[test]
fn the_recipe_scaler_defaults_are_the_scaler_defaults() {
    let amp = AmpSection {
        enabled: Some(true),
        grad_scaler: Some(true),
        ..AmpSection::default()
    };
    assert_eq!(scaler_config(&amp), GradScalerConfig::default());
    assert!(!scaler_config(&AmpSection::default()).enabled);
}

#[test]
fn the_binary_refuses_bad_recipes_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.toml");
    std::fs::write(
        &file,
        format!(
            "[train]\nbatchsize = 4\nrun_dir = {:?}\n",
            dir.path().join("runs")
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_train"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("typo.toml") && stderr.contains("`train.batchsize`"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("runs").exists(),
        "a refused recipe must not create a run folder"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_train"))
        .arg(&file)
        .args(["--set", "train.batchsize=", "--set", "backend.mode=fast"])
        .output()
        .unwrap();
    assert!(!out.status.success());

    let missing = Command::new(env!("CARGO_BIN_EXE_train"))
        .arg(dir.path().join("nope.toml"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nope.toml"));
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_in_a_build_without_it_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cuda.toml");
    std::fs::write(
        &file,
        format!(
            "[backend]\ndevice = \"cuda\"\n[train]\nrun_dir = {:?}\n",
            dir.path().join("runs")
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_train"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cuda") && stderr.contains("--features cuda"),
        "{stderr}"
    );
    assert!(!dir.path().join("runs").exists());
}

#[test]
fn fused_on_the_cpu_is_refused() {
    let err = burnacc_train::stack::resolve_stack(Mode::Fused, DeviceSpec::Cpu).unwrap_err();
    assert!(
        err.to_string().contains("fused") && err.to_string().contains("wgpu"),
        "{err}"
    );
}

#[test]
fn every_kernel_route_is_switched_by_a_recipe_key() {
    let keys = burnacc_train::recipe::KernelsSection::keys();
    for key in burnacc_train::stack::acc_kernels::route_keys() {
        assert!(
            keys.contains(&key),
            "route key {key} is not a [kernels] key"
        );
    }
}
