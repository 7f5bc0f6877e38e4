//! Tier 3: checkpoints and `--resume`. A run resumed from its checkpoint at step N continues
//! bit for bit as the run that never stopped (losses, weights, optimizer state), on the CPU
//! stacks, with dropout-like random draws, the loss scaler and checkpointed blocks; a
//! checkpoint that does not fit is refused, naming the file and the mismatch, with nothing in
//! the run folder changed; a process killed with SIGKILL at any moment resumes from its last
//! complete checkpoint.

use burnacc_train::recipe::{DeviceSpec, Mode, Recipe, parse_recipe};
use burnacc_train::resume::{FileDigest, MANIFEST, MARKER, checkpoint_dir};
use burnacc_train::stack::Stack;
use burnacc_train::trainer::{RunOptions, RunSummary, run_checked};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    launch_two, logged_losses, logged_records, losses, tiny_recipe, tiny_swin_text,
};

fn cpu_eager() -> Stack {
    Stack::new(Mode::Eager, DeviceSpec::Cpu)
}

fn cpu_acc() -> Stack {
    Stack::new(Mode::Acc, DeviceSpec::Cpu)
}

fn options(resume: Option<PathBuf>) -> RunOptions {
    RunOptions {
        quiet: true,
        resume,
        ..Default::default()
    }
}

fn train(recipe: &Recipe, stack: Stack, resume: Option<PathBuf>) -> anyhow::Result<RunSummary> {
    run_checked(recipe, Path::new("resume.toml"), stack, &options(resume))
}

/// Every file under `dir` (relative path → bytes).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_owned();
                files.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// The tensors of a safetensors file: name → (dtype, shape, bytes).
fn tensors(bytes: &[u8]) -> BTreeMap<String, (String, Vec<usize>, Vec<u8>)> {
    let file = safetensors::SafeTensors::deserialize(bytes).unwrap();
    file.tensors()
        .into_iter()
        .map(|(name, view)| {
            let value = (
                format!("{:?}", view.dtype()),
                view.shape().to_vec(),
                view.data().to_vec(),
            );
            (name, value)
        })
        .collect()
}

/// A safetensors file with its f32 tensors whose name passes `convert` converted to f64 (the
/// others as they are), and its metadata kept.
fn in_f64(bytes: &[u8], convert: fn(&str) -> bool) -> Vec<u8> {
    use safetensors::{Dtype, SafeTensors, tensor::TensorView};
    let file = SafeTensors::deserialize(bytes).unwrap();
    let (_, header) = SafeTensors::read_metadata(bytes).unwrap();
    let converted: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let (dtype, data) = if view.dtype() == Dtype::F32 && convert(&name) {
                let wide = view
                    .data()
                    .chunks_exact(4)
                    .flat_map(|b| {
                        f64::from(f32::from_le_bytes(b.try_into().unwrap())).to_le_bytes()
                    })
                    .collect();
                (Dtype::F64, wide)
            } else {
                (view.dtype(), view.data().to_vec())
            };
            (name, dtype, view.shape().to_vec(), data)
        })
        .collect();
    let views = converted.iter().map(|(name, dtype, shape, data)| {
        (
            name.clone(),
            TensorView::new(*dtype, shape.clone(), data).unwrap(),
        )
    });
    safetensors::serialize(views, header.metadata().clone()).unwrap()
}

/// Trains `recipe` (which saves at step `at` and at its end) on `stack`, then resumes it from
/// its checkpoint at step `at`, and checks that the resumed run repeats the uninterrupted
/// run's last steps bit for bit: logged losses, the final checkpoint's weights and optimizer
/// state.
fn resumes_bit_for_bit(recipe: &Recipe, stack: Stack, at: usize) {
    let whole = train(recipe, stack, None).unwrap();
    let total = recipe.train.max_steps;
    let whole_losses = losses(&whole);
    let last = checkpoint_dir(&whole.run_dir, total);
    let whole_files = snapshot(&last);

    let resumed = train(recipe, stack, Some(checkpoint_dir(&whole.run_dir, at))).unwrap();
    assert_eq!(
        resumed.run_dir, whole.run_dir,
        "{stack}: resumes in its run folder"
    );
    let resumed_losses = losses(&resumed);
    assert_eq!(
        resumed_losses.len(),
        total,
        "{stack}: one log line per step, none repeated or missing"
    );
    assert_eq!(
        resumed_losses, whole_losses,
        "{stack}: the losses differ after resuming at step {at}"
    );
    let resumed_files = snapshot(&last);
    for name in ["model.safetensors", "optimizer.safetensors"] {
        let name = Path::new(name);
        let (resumed, whole) = (tensors(&resumed_files[name]), tensors(&whole_files[name]));
        assert_eq!(
            resumed.keys().collect::<Vec<_>>(),
            whole.keys().collect::<Vec<_>>(),
            "{stack}: {} holds other tensors after resuming",
            name.display()
        );
        let differing: Vec<&String> = whole.keys().filter(|k| resumed[*k] != whole[*k]).collect();
        assert!(
            differing.is_empty(),
            "{stack}: {} after resuming differs from the uninterrupted run's in {differing:?}",
            name.display()
        );
    }
}

#[test]
fn a_resnet_resumes_bit_for_bit_on_cpu_eager_and_acc() {
    for stack in [cpu_eager(), cpu_acc()] {
        let root = tempfile::tempdir().unwrap();
        // 24 training images in batches of 8: step 4 is the first batch of epoch 1.
        let recipe = tiny_recipe(
            root.path(),
            7,
            &[
                "train.save_every=4",
                "train.keep_last=0",
                "optim.momentum=0.9",
            ],
        );
        resumes_bit_for_bit(&recipe, stack, 4);
    }
}

/// wgpu (Mesa's lavapipe here): Burn's fusion on `acc` and autotuned kernels choose the same
/// way within one process, so a resumed run repeats the uninterrupted one exactly there too.
#[test]
fn a_resnet_resumes_bit_for_bit_on_wgpu_eager_and_acc() {
    for mode in [Mode::Eager, Mode::Acc] {
        let root = tempfile::tempdir().unwrap();
        let recipe = tiny_recipe(
            root.path(),
            5,
            &[
                "train.save_every=3",
                "train.keep_last=0",
                "train.eval=false",
            ],
        );
        resumes_bit_for_bit(&recipe, Stack::new(mode, DeviceSpec::Wgpu), 3);
    }
}

#[test]
fn a_swin_with_stochastic_depth_adamw_and_accumulation_resumes_bit_for_bit_on_cpu_acc() {
    let root = tempfile::tempdir().unwrap();
    let sets: Vec<String> = [
        "model.drop_path_rate=0.2",
        // Two micro-batches per step: step 2 ends on the first batch of epoch 1.
        "train.accumulate=2",
        "train.save_every=2",
        "train.keep_last=0",
        "train.save_model=true",
    ]
    .map(String::from)
    .to_vec();
    let recipe = parse_recipe(
        &tiny_swin_text(root.path(), 5),
        Path::new("tiny_swin.toml"),
        &sets,
    )
    .unwrap();
    resumes_bit_for_bit(&recipe, cpu_acc(), 2);
}

#[test]
fn bf16_autocast_with_its_loss_scaler_and_checkpointed_blocks_resumes_bit_for_bit() {
    let root = tempfile::tempdir().unwrap();
    // The scale grows every 2 clean steps, so the scaler's state at step 3 is mid-interval.
    let recipe = tiny_recipe(
        root.path(),
        6,
        &[
            "amp.enabled=true",
            "amp.dtype=\"bf16\"",
            "amp.grad_scaler=true",
            "amp.growth_interval=2",
            "checkpoint.mode=blocks",
            "train.save_every=3",
            "train.keep_last=0",
        ],
    );
    resumes_bit_for_bit(&recipe, cpu_acc(), 3);
}

#[test]
fn keep_last_keeps_the_newest_complete_checkpoints() {
    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(
        root.path(),
        5,
        &[
            "train.save_every=1",
            "train.keep_last=2",
            "train.eval=false",
        ],
    );
    let run = train(&recipe, cpu_eager(), None).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(run.run_dir.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["step-4", "step-5"]);
    for step in [4, 5] {
        assert!(checkpoint_dir(&run.run_dir, step).join(MARKER).is_file());
    }
}

/// A checkpoint the battery spoils, one way each, in a copy of the run folder.
struct Battery {
    root: tempfile::TempDir,
    recipe: Recipe,
    run_dir: PathBuf,
}

impl Battery {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let recipe = tiny_recipe(
            root.path(),
            3,
            &[
                "train.save_every=2",
                "train.keep_last=0",
                "train.eval=false",
            ],
        );
        let run = train(&recipe, cpu_eager(), None).unwrap();
        Battery {
            root,
            recipe,
            run_dir: run.run_dir,
        }
    }

    fn checkpoint(&self) -> PathBuf {
        checkpoint_dir(&self.run_dir, 2)
    }

    /// Replaces `name` in the step-2 checkpoint by `bytes`, and its digest in the manifest
    /// (a file that is whole but not what this run needs).
    fn replace(&self, name: &str, bytes: &[u8]) {
        let dir = self.checkpoint();
        std::fs::write(dir.join(name), bytes).unwrap();
        let path = dir.join(MANIFEST);
        let mut manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        manifest["files"][name] = serde_json::to_value(FileDigest::of(bytes)).unwrap();
        std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    }

    /// Resuming `recipe` from the step-2 checkpoint is refused with a message containing each
    /// of `expected`, and the run folder is left as it was.
    fn refused(&self, recipe: &Recipe, expected: &[&str]) {
        let before = snapshot(&self.run_dir);
        let error = train(recipe, cpu_eager(), Some(self.checkpoint()))
            .expect_err("the resume must be refused");
        let message = format!("{error:#}");
        for part in expected {
            assert!(message.contains(part), "`{part}` is not in: {message}");
        }
        assert!(
            snapshot(&self.run_dir) == before,
            "a refused resume changed the run folder ({message})"
        );
    }
}

#[test]
fn checkpoints_that_do_not_fit_are_refused_naming_the_file_and_the_mismatch() {
    let b = Battery::new();
    let dir = b.checkpoint();
    let model = dir.join("model.safetensors");
    let model_name = model.display().to_string();
    let optimizer_name = dir.join("optimizer.safetensors").display().to_string();

    // A recipe that would train differently: every differing key is named with both values.
    let mut other = b.recipe.clone();
    other.optim.lr = 0.01;
    other.train.batch_size = 4;
    b.refused(
        &other,
        &[
            "`optim.lr` = 0.05 in the checkpoint, 0.01 now",
            "`train.batch_size`",
        ],
    );
    // Nothing left to train.
    let mut done = b.recipe.clone();
    done.train.max_steps = 2;
    b.refused(&done, &["train.max_steps", "step 2"]);

    // Another model's weights (wider layers), whole and listed in the manifest.
    let wide_root = tempfile::tempdir().unwrap();
    let wide = tiny_recipe(
        wide_root.path(),
        1,
        &["model.base_width=16", "train.eval=false"],
    );
    let wide_run = train(&wide, cpu_eager(), None).unwrap();
    let wide_model =
        std::fs::read(checkpoint_dir(&wide_run.run_dir, 1).join("model.safetensors")).unwrap();
    let original = std::fs::read(&model).unwrap();
    b.replace("model.safetensors", &wide_model);
    b.refused(
        &b.recipe,
        &[&model_name, "does not fit the model", "conv1.weight"],
    );
    // A Swin's weights: other tensors altogether.
    let swin_root = tempfile::tempdir().unwrap();
    let swin = parse_recipe(
        &tiny_swin_text(swin_root.path(), 1),
        Path::new("tiny_swin.toml"),
        &["train.save_model=true".into(), "train.eval=false".into()],
    )
    .unwrap();
    let swin_run = train(&swin, cpu_eager(), None).unwrap();
    let swin_model =
        std::fs::read(checkpoint_dir(&swin_run.run_dir, 1).join("model.safetensors")).unwrap();
    b.replace("model.safetensors", &swin_model);
    b.refused(&b.recipe, &[&model_name, "another model"]);
    b.replace("model.safetensors", &original);

    // The same weights and optimizer state in f64: whole, right shapes, wrong dtype.
    b.replace("model.safetensors", &in_f64(&original, |_| true));
    b.refused(
        &b.recipe,
        &[&model_name, "is F64 in the file, F32 in the model"],
    );
    b.replace("model.safetensors", &original);
    let optimizer = std::fs::read(dir.join("optimizer.safetensors")).unwrap();
    // The step counters stay f32 (they are f32 whatever the parameter's dtype).
    b.replace(
        "optimizer.safetensors",
        &in_f64(&optimizer, |name| !name.ends_with(".step")),
    );
    b.refused(&b.recipe, &[&optimizer_name, "is F64 in the file"]);
    b.replace("optimizer.safetensors", &optimizer);

    // A foreign file in the optimizer's place.
    b.replace("optimizer.safetensors", b"not a tensor file");
    b.refused(&b.recipe, &[&optimizer_name, "not a safetensors file"]);
    // The wide run's optimizer state: momentum buffers of other shapes.
    let wide_optimizer =
        std::fs::read(checkpoint_dir(&wide_run.run_dir, 1).join("optimizer.safetensors")).unwrap();
    b.replace("optimizer.safetensors", &wide_optimizer);
    b.refused(&b.recipe, &[&optimizer_name, "has shape"]);
    b.replace("optimizer.safetensors", &optimizer);

    // Truncated after the manifest was written: the digest does not match.
    std::fs::write(&model, &original[..original.len() / 2]).unwrap();
    b.refused(&b.recipe, &[&model_name, "is corrupt"]);
    std::fs::write(&model, &original).unwrap();

    // No marker: the run stopped while writing it.
    std::fs::remove_file(dir.join(MARKER)).unwrap();
    b.refused(&b.recipe, &[&dir.display().to_string(), "marker"]);
    // Resuming the run folder takes its latest complete checkpoint: the one of the last step,
    // which leaves nothing to train.
    let latest = train(&b.recipe, cpu_eager(), Some(b.run_dir.clone()));
    let message = format!("{:#}", latest.expect_err("step 3 is the last step"));
    assert!(message.contains("step 3"), "{message}");
    drop(b.root);
}

/// A run of the `train` binary on `recipe_file`.
fn spawn_train(recipe_file: &Path, resume: Option<&Path>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_train"));
    command.arg(recipe_file).arg("--quiet");
    if let Some(dir) = resume {
        command.arg("--resume").arg(dir);
    }
    command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `ready()` or the child ends; SIGKILLs it if it is still running. Returns
/// whether it was killed.
fn kill_when(child: &mut Child, ready: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if ready() {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("train neither finished nor reached the moment to kill it");
}

/// The steps of the `.step-<S>.partial` folders under `run_dir` (checkpoints being written).
fn partial_steps(run_dir: &Path) -> Vec<usize> {
    let Ok(entries) = std::fs::read_dir(run_dir.join("checkpoints")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(".step-")?
                .strip_suffix(".partial")?
                .parse()
                .ok()
        })
        .collect()
}

/// The step of the latest complete checkpoint under `run_dir`.
fn latest_complete(run_dir: &Path) -> usize {
    burnacc_train::resume::complete_checkpoints(run_dir)
        .unwrap()
        .last()
        .map_or(0, |(step, _)| *step)
}

#[test]
fn a_run_killed_with_sigkill_resumes_from_its_last_complete_checkpoint() {
    const STEPS: usize = 12;
    let reference_root = tempfile::tempdir().unwrap();
    // The binary runs the recipe's stack; the reference runs the same.
    let sets = [
        "train.save_every=1",
        "train.keep_last=2",
        "train.eval=false",
        "backend.mode=eager",
        "backend.device=cpu",
    ];
    let reference = train(
        &tiny_recipe(reference_root.path(), STEPS, &sets),
        cpu_eager(),
        None,
    )
    .unwrap();
    let expected = losses(&reference);

    let root = tempfile::tempdir().unwrap();
    let recipe = tiny_recipe(root.path(), STEPS, &sets);
    let recipe_file = root.path().join("resume.toml");
    std::fs::write(&recipe_file, burnacc_train::recipe::recipe_toml(&recipe)).unwrap();
    let run_dir = root.path().join("runs").join("run-1");

    // Between steps: right after the checkpoint of step 3 is complete.
    let mut child = spawn_train(&recipe_file, None);
    let killed = kill_when(&mut child, || {
        checkpoint_dir(&run_dir, 3).join(MARKER).is_file()
    });
    assert!(killed, "the run ended before step 3's checkpoint");
    // In the middle of a checkpoint write, several times: a `.partial` folder is being filled.
    // A killed write leaves its `.partial` folder until the next write: only one of a step
    // the resumed process has not redone yet is its own.
    let mut killed_mid_write = 0;
    for _ in 0..3 {
        let after = latest_complete(&run_dir) + 1;
        let mut child = spawn_train(&recipe_file, Some(&run_dir));
        if kill_when(&mut child, || {
            partial_steps(&run_dir).iter().any(|&s| s > after)
        }) {
            killed_mid_write += 1;
        }
    }
    assert!(
        killed_mid_write > 0,
        "no kill landed during a checkpoint write"
    );
    // Then to the end.
    let child = spawn_train(&recipe_file, Some(&run_dir));
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the last resume failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let resumed: Vec<(u64, f64)> = logged_records(&run_dir)
        .iter()
        .map(|r| (r["step"].as_u64().unwrap(), r["loss"].as_f64().unwrap()))
        .collect();
    let steps: Vec<u64> = resumed.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        steps,
        (1..=STEPS as u64).collect::<Vec<_>>(),
        "each step logged once"
    );
    let resumed_losses: Vec<f64> = resumed.iter().map(|(_, l)| *l).collect();
    assert_eq!(
        resumed_losses, expected,
        "the killed and resumed run differs from the uninterrupted one"
    );
    assert!(
        partial_steps(&run_dir).is_empty(),
        "a partial checkpoint was left behind"
    );
}

/// Two processes under `launch`: every rank loads the checkpoint, rank 0 alone writes; the
/// resumed run repeats the uninterrupted one's losses and final weights exactly.
#[test]
fn two_launched_processes_resume_bit_for_bit() {
    let root = tempfile::tempdir().unwrap();
    let text = tiny_swin_text(root.path(), 4)
        .replace("batch_size = 8", "batch_size = 4")
        .replace(
            "save_model = false",
            "save_model = true\n        save_every = 2\n        keep_last = 0\n        eval = false",
        );
    let recipe = root.path().join("ddp.toml");
    let sections = "[backend]\nmode = \"acc\"\ndevice = \"cpu\"\n[ddp]\ntimeout_secs = 60\n";
    std::fs::write(&recipe, format!("{text}\n{sections}")).unwrap();

    launch_two(&recipe, &[]);
    let run_dir = root.path().join("runs").join("run-1");
    let whole = logged_losses(&run_dir);
    assert_eq!(whole.len(), 4);
    let last = checkpoint_dir(&run_dir, 4).join("model.safetensors");
    let whole_weights = tensors(&std::fs::read(&last).unwrap());

    let checkpoint = checkpoint_dir(&run_dir, 2);
    launch_two(&recipe, &["--resume".as_ref(), checkpoint.as_os_str()]);
    let runs: Vec<_> = std::fs::read_dir(root.path().join("runs"))
        .unwrap()
        .collect();
    assert_eq!(
        runs.len(),
        1,
        "the resumed run wrote into its own run folder only"
    );
    assert_eq!(
        logged_losses(&run_dir),
        whole,
        "losses after resuming both processes"
    );
    assert!(
        tensors(&std::fs::read(&last).unwrap()) == whole_weights,
        "the final weights after resuming both processes differ"
    );
}
