//! A benchmark case (recipe × mode × precision) and how it runs inside one process.

use super::feed::DataFeed;
use super::measure::{Measure, StepCounts};
use super::record::{BenchRecord, Status};
use anyhow::{Context, Result};
use burnacc_train::precision::supported_float_dtypes;
use burnacc_train::recipe::{KernelsSection, Mode, Recipe, parse_recipe};
use burnacc_train::stack::{Stack, resolve_stack, with_stack};
use std::path::PathBuf;
use std::time::Instant;

/// One configuration to measure, passed to the child process as JSON.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BenchCase {
    /// The recipe: model, batch size, input size, optimizer, device.
    pub recipe: PathBuf,
    /// `--set` overrides applied to it, in order.
    pub sets: Vec<String>,
    /// The backend mode.
    pub mode: Mode,
    /// `f32`, or an autocast dtype: `bf16` | `f16`.
    pub precision: String,
    /// Synthetic or real batches.
    #[serde(default)]
    pub data: DataFeed,
    /// Steps to run.
    pub counts: StepCounts,
    /// Count kernel launches and reservations per step on CubeCL devices (`device_work`).
    #[serde(default)]
    pub count_launches: bool,
}

impl BenchCase {
    /// The recipe as this case runs it: the overrides, then the mode and the precision
    /// (autocast off outside mode acc, where [`run_case_here`] skips half precisions).
    /// Dataset paths are only read by a case on real data.
    pub fn resolve_recipe(&self) -> Result<Recipe> {
        let text = std::fs::read_to_string(&self.recipe)
            .with_context(|| format!("cannot read recipe {}", self.recipe.display()))?;
        let mut sets = self.sets.clone();
        sets.push(format!("backend.mode={}", self.mode));
        // burnacc's kernels run in mode acc: the eager and fused cases measure Burn alone.
        if self.mode != Mode::Acc {
            sets.extend(
                KernelsSection::keys()
                    .iter()
                    .map(|key| format!("{key}=false")),
            );
        }
        match self.precision.as_str() {
            // Autocast exists in mode acc only: the case is skipped, named by the recipe.
            _ if self.mode != Mode::Acc => sets.push("amp.enabled=false".into()),
            "f32" => sets.push("amp.enabled=false".into()),
            dtype @ ("bf16" | "f16") => {
                sets.push("amp.enabled=true".into());
                sets.push(format!("amp.dtype={dtype}"));
            }
            other => anyhow::bail!("precision `{other}`: expected f32, bf16 or f16"),
        }
        Ok(parse_recipe(&text, &self.recipe, &sets)?)
    }

    /// The record's identifying fields, before anything is measured.
    pub fn blank_record(&self, recipe: Option<&Recipe>) -> BenchRecord {
        let (model, device, batch, input) = match recipe {
            Some(r) => (
                r.model.name.as_str().to_owned(),
                r.backend.device.to_string(),
                r.train.batch_size,
                if r.model.name.is_text() {
                    format!("seq{}", r.data.max_length)
                } else {
                    format!("{}px", r.data.image_size)
                },
            ),
            None => (
                self.recipe.display().to_string(),
                String::new(),
                0,
                String::new(),
            ),
        };
        BenchRecord {
            framework: "burnacc".into(),
            model,
            mode: self.mode.to_string(),
            precision: self.precision.clone(),
            data: Some(self.data.as_str().to_owned()),
            device,
            batch,
            input,
            ..Default::default()
        }
    }
}

/// Why `case` cannot run on this machine, if it cannot: the reason becomes a `skipped` record.
fn unavailable(case: &BenchCase, recipe: &Recipe) -> Result<Stack, String> {
    if case.precision != "f32" && case.mode != Mode::Acc {
        return Err(format!(
            "autocast ({}) is burnacc's: it runs in mode acc only",
            case.precision
        ));
    }
    let stack = resolve_stack(case.mode, recipe.backend.device).map_err(|e| e.to_string())?;
    if case.precision != "f32" && !supported_float_dtypes(stack).contains(&case.precision.as_str())
    {
        return Err(format!("{} is not supported by {stack}", case.precision));
    }
    Ok(stack)
}

/// Runs `case` in this process, calling `report` with the record as it fills in; returns the
/// final record (`ok`, `skipped` or `failed`).
pub fn run_case_here(
    case: &BenchCase,
    started: Instant,
    report: &dyn Fn(&BenchRecord),
) -> BenchRecord {
    let recipe = match case.resolve_recipe() {
        Ok(recipe) => recipe,
        Err(e) => {
            return BenchRecord {
                status: Some(Status::Failed),
                reason: Some(format!("{e:#}")),
                ..case.blank_record(None)
            };
        }
    };
    let mut record = case.blank_record(Some(&recipe));
    let stack = match unavailable(case, &recipe) {
        Ok(stack) => stack,
        Err(reason) => {
            record.status = Some(Status::Skipped);
            record.reason = Some(reason);
            return record;
        }
    };
    record.device = stack.device().to_string();
    record.stack = stack.type_name().to_owned();
    let measure = Measure {
        recipe: &recipe,
        data: case.data,
        counts: case.counts,
        started,
        record: record.clone(),
        report,
    };
    with_stack(stack, measure).unwrap_or_else(|e| BenchRecord {
        status: Some(Status::Failed),
        reason: Some(format!("{e:#}")),
        ..record
    })
}
