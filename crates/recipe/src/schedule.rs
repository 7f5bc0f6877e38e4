//! Learning rate at each step: linear warm-up, then one of PyTorch's schedules (constant,
//! cosine, step, multistep, onecycle) or Hugging Face's linear decay. Each is checked against
//! the values of `torch.optim.lr_scheduler` and `transformers` by
//! `crates/recipe/tests/it/tier1/lr_schedules.rs` (fixture: `scripts/record_lr_schedules.py`).

use crate::{OptimSection, Schedule};

/// Learning rate for optimizer step `step` (0-based) of a `total`-step run: what PyTorch's
/// optimizer holds during step `step` when its scheduler steps after each optimizer step.
///
/// Warm-up rises linearly from `lr / warmup_steps` to `lr` over `warmup_steps` steps (PyTorch's
/// `LinearLR` starting near zero; Hugging Face's warm-up starts at 0, one step earlier). The
/// schedule then runs on the steps after warm-up, `t = step - warmup_steps`:
/// - constant: `lr`;
/// - cosine: from `lr` to `min_lr`, reaching `min_lr` at the last step;
/// - step: `lr × gamma^⌊t / step_size⌋`;
/// - multistep: `lr × gamma^(milestones ≤ t)`;
/// - linear: `lr × (total − step) / (total − warmup_steps)`, 0 at `total`;
/// - onecycle (no warm-up): PyTorch's two-phase cosine `OneCycleLR` with `max_lr = lr`.
pub fn learning_rate(optim: &OptimSection, step: usize, total: usize) -> f64 {
    let warmup = optim.warmup_steps;
    if step < warmup {
        return optim.lr * (step + 1) as f64 / warmup as f64;
    }
    let t = step - warmup;
    match optim.schedule {
        Schedule::Constant => optim.lr,
        Schedule::Cosine => {
            let span = total.saturating_sub(warmup).saturating_sub(1).max(1) as f64;
            let progress = (t as f64 / span).min(1.0);
            optim.min_lr
                + 0.5 * (optim.lr - optim.min_lr) * (1.0 + (std::f64::consts::PI * progress).cos())
        }
        Schedule::Step => optim.lr * optim.gamma.powi((t / optim.step_size.max(1)) as i32),
        Schedule::Multistep => {
            let passed = optim.milestones.iter().filter(|&&m| m <= t).count();
            optim.lr * optim.gamma.powi(passed as i32)
        }
        Schedule::Linear => {
            let span = total.saturating_sub(warmup).max(1) as f64;
            optim.lr * (total.saturating_sub(step) as f64 / span).max(0.0)
        }
        Schedule::Onecycle => one_cycle(optim, step, total),
    }
}

/// PyTorch's `OneCycleLR` (`three_phase=False`, `anneal_strategy="cos"`) at `step` of
/// `total`, in its order of operations.
fn one_cycle(optim: &OptimSection, step: usize, total: usize) -> f64 {
    let max_lr = optim.lr;
    let initial_lr = max_lr / optim.div_factor;
    let min_lr = initial_lr / optim.final_div_factor;
    let rise_end = optim.pct_start * total as f64 - 1.0;
    let fall_end = total as f64 - 1.0;
    let step = step as f64;
    let (start_step, end_step, from, to) = if step <= rise_end {
        (0.0, rise_end, initial_lr, max_lr)
    } else {
        (rise_end, fall_end, max_lr, min_lr)
    };
    let pct = (step - start_step) / (end_step - start_step);
    let cos_out = (std::f64::consts::PI * pct).cos() + 1.0;
    to + (from - to) / 2.0 * cos_out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn optim(schedule: Schedule, warmup_steps: usize) -> OptimSection {
        OptimSection {
            lr: 0.1,
            min_lr: 0.001,
            schedule,
            warmup_steps,
            ..Default::default()
        }
    }

    #[test]
    fn cosine_starts_at_lr_and_ends_at_min_lr() {
        let o = optim(Schedule::Cosine, 0);
        assert_eq!(learning_rate(&o, 0, 100), 0.1);
        assert!((learning_rate(&o, 99, 100) - 0.001).abs() < 1e-12);
        let mid = learning_rate(&o, 49, 99);
        assert!((mid - (0.001 + 0.5 * 0.099)).abs() < 1e-12, "{mid}");
    }

    #[test]
    fn warmup_is_linear_then_constant() {
        let o = optim(Schedule::Constant, 4);
        let expected = [0.025, 0.05, 0.075, 0.1, 0.1, 0.1];
        for (step, want) in expected.iter().enumerate() {
            let got = learning_rate(&o, step, 10);
            assert!((got - want).abs() < 1e-15, "step {step}: {got} != {want}");
        }
    }
}
