//! One `#[test]` per op family and backend stack.
//!
//! The stacks are the ones burnacc ships or builds on (DESIGN.md §2); adding a stack is one
//! `suite!` line, but each one compiles every check once more, so keep the list short.

use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Flex, NdArray, Wgpu};
use burnacc_backend::Acc;
use burnacc_fusion::{CpuFlex, CpuFused, CubeFused};
use burnacc_tests::conformance::{Stack, families, run_family};
use std::sync::{Mutex, MutexGuard};

/// Held by every wgpu test. The wgpu stacks share one device, and the first use of each shape
/// autotunes (compiles and times candidate kernels on lavapipe); run side by side, they contend
/// for the same two cores and for the same tuning keys, which made a cold run 2.5× slower.
static WGPU: Mutex<()> = Mutex::new(());

fn wgpu_lock() -> MutexGuard<'static, ()> {
    // A failed wgpu test poisons the lock; the next one may still run.
    WGPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

macro_rules! suite {
    ($(#[$doc:meta])* $module:ident: $backend:ty, $stack:expr, $device:expr $(, $lock:ident)?) => {
        $(#[$doc])*
        mod $module {
            use super::*;
            type B = $backend;

            fn device() -> <B as burn::tensor::backend::BackendTypes>::Device {
                $device
            }

            /// Serialises this stack's tests with the other stacks holding the same lock.
            fn serial() -> Option<MutexGuard<'static, ()>> {
                None $(.or(Some($lock())))?
            }

            #[test]
            fn elementwise() {
                let _serial = serial();
                run_family::<B>(&device(), $stack, families::elementwise::<B>());
            }

            #[test]
            fn reduction() {
                let _serial = serial();
                run_family::<B>(&device(), $stack, families::reduction::<B>());
            }

            #[test]
            fn matmul() {
                let _serial = serial();
                run_family::<B>(&device(), $stack, families::matmul::<B>());
            }

            #[test]
            fn movement() {
                let _serial = serial();
                run_family::<B>(&device(), $stack, families::movement::<B>());
            }

            #[test]
            fn nn() {
                let _serial = serial();
                run_family::<B>(&device(), $stack, families::nn::<B>());
            }
        }
    };
}

suite!(
    /// Flex, Burn's CPU backend and the inner backend of burnacc's CPU stack.
    flex: Autodiff<Flex>, Stack::Plain, Default::default()
);
suite!(
    /// `Acc` below autodiff over Flex.
    acc_flex: Autodiff<Acc<Flex>>, Stack::Acc, Default::default()
);
suite!(
    /// burnacc's CPU stack as `train` builds it: `Acc` above autodiff over burnacc's CPU
    /// backend.
    shipped_acc_cpu: Acc<Autodiff<CpuFlex, BalancedCheckpointing>>, Stack::AccAboveAutodiff, Default::default()
);
suite!(
    /// burnacc's wgpu stack as `train` builds it.
    shipped_acc_wgpu: Acc<Autodiff<CubeFused<WgpuRuntime>, BalancedCheckpointing>>, Stack::AccAboveAutodiff, WgpuDevice::default(), wgpu_lock
);
suite!(
    /// Acc over a second, independent CPU backend.
    acc_ndarray: Autodiff<Acc<NdArray<f32>>>, Stack::Acc, Default::default()
);
suite!(
    /// wgpu without fusion: one CubeCL kernel per op ("eager" mode).
    wgpu_eager: Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>, Stack::Plain, WgpuDevice::default(), wgpu_lock
);
suite!(
    /// wgpu with Burn's fusion ("fused" mode).
    wgpu_fused: Autodiff<Wgpu>, Stack::Plain, WgpuDevice::default(), wgpu_lock
);
suite!(
    /// burnacc's wgpu stack ("acc" mode).
    acc_wgpu: Autodiff<Acc<Wgpu>>, Stack::Acc, WgpuDevice::default(), wgpu_lock
);
suite!(
    /// burnacc's CPU backend under Burn's fusion (`burnacc_fusion::CpuFused`), the runtime
    /// burnacc's CPU fusers plug into.
    cpu_fused: Autodiff<CpuFused>, Stack::Plain, Default::default()
);
