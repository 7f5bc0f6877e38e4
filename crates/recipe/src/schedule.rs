//! Learning rate at each step: linear warm-up, then constant or cosine decay.

use crate::{OptimSection, Schedule};

/// Learning rate for optimizer step `step` (0-based) of a `total`-step run.
///
/// Warm-up rises linearly from `lr / warmup_steps` to `lr` over `warmup_steps` steps (PyTorch's
/// `LinearLR` starting near zero); cosine then decays from `lr` to `min_lr` over the remaining
/// steps, reaching `min_lr` at the last step.
pub fn learning_rate(optim: &OptimSection, step: usize, total: usize) -> f64 {
    let warmup = optim.warmup_steps;
    if step < warmup {
        return optim.lr * (step + 1) as f64 / warmup as f64;
    }
    match optim.schedule {
        Schedule::Constant => optim.lr,
        Schedule::Cosine => {
            let span = total.saturating_sub(warmup).saturating_sub(1).max(1) as f64;
            let progress = ((step - warmup) as f64 / span).min(1.0);
            optim.min_lr
                + 0.5 * (optim.lr - optim.min_lr) * (1.0 + (std::f64::consts::PI * progress).cos())
        }
    }
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
