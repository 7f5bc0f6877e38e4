//! Kernel micro-benchmarks: each fused kernel against Burn's own ops on the same device, and
//! the bandwidth it achieves against the device's copy bandwidth (issue 6).
//!
//! ```text
//! cargo bench -p burnacc-kernels --bench kernels -- [--device wgpu|cpu|cuda] [--quick]
//!     [--reps N] [--rows N] [--only NAME,...]
//! ```
//!
//! `cuda` needs `--features cuda`. Per case (LayerNorm, bias + GELU, QuickGELU, and
//! bias + dropout + residual add, each forward and backward; multi-tensor AdamW over BERT
//! parameters and SGD-momentum over ResNet-50 parameters; Swin's window process and its
//! reverse, and its attention softmax forward and backward, against the model's own ops), on
//! the chosen device (and, last, `multi_apply` sequential against 2 and 4 streams, the NMS
//! family on the device against the host selection, `nms.rs`, and DCNv2's backward, burnacc's
//! against Burn's, `dcn.rs`):
//!
//! - **fused**: the kernel through its backend extension trait on the eager backend
//!   (`CubeBackend` for wgpu and cuda; Flex on the CPU, where only the optimizers have a fused
//!   loop and the rest is the reference);
//! - **Burn fusion**: the plain-Burn reference on Burn's fusion backend (`burn::backend::Wgpu`,
//!   `burn::backend::Cuda`), Burn's best; not on the CPU;
//! - **Burn eager**: the same reference on the eager backend;
//! - **copy**: a copy of as many bytes as the kernel must move, half read and half written:
//!   `CubeTensor::copy` (a vectorised identity kernel into a new buffer) on CubeCL, a
//!   multi-threaded `memcpy` between preallocated buffers on the CPU.
//!
//! Bytes moved count each input read and each output written once (see `cases.rs`); GB/s is
//! that over the fused time, and "% of copy" is the copy's time over the fused time. Times are
//! medians over `--reps` repetitions after warm-up, each bracketed by `B::sync`; see
//! `timing.rs` for when calls are batched between syncs and when each call is synced.
//! Nothing is asserted: this is a benchmark.

#[path = "kernels/cases.rs"]
mod cases;
#[path = "kernels/dcn.rs"]
mod dcn;
#[path = "kernels/machine.rs"]
mod machine;
#[path = "kernels/multi_apply.rs"]
mod multi_apply;
#[path = "kernels/nms.rs"]
mod nms;
#[path = "kernels/runs.rs"]
mod runs;
#[path = "kernels/table.rs"]
mod table;
#[path = "kernels/timing.rs"]
mod timing;

use std::collections::HashMap;
use std::time::Duration;

use burn::backend::Flex;
use burn::tensor::backend::Backend;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use burnacc_kernels::dcn::DcnKernel;
use burnacc_kernels::nms::NmsKernel;
use rayon::prelude::*;

use cases::{Case, Sizes};
use runs::Fused;
use table::Row;
use timing::{Sync, Timer};

impl<R, F, I, BT> Fused for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    /// `CubeTensor::copy`: CubeCL's vectorised identity kernel into a new buffer.
    fn copy_seconds(bytes: usize, timer: &Timer, device: &Self::Device) -> f64 {
        runs::copy_tensor::<Self>(bytes, timer, device, |x: CubeTensor<R>| x.copy())
    }
}

impl Fused for Flex {
    /// A multi-threaded `memcpy` between two buffers allocated once: the memory system's copy
    /// bandwidth. (Flex's own element-wise ops allocate their outputs, whose first-touch page
    /// faults would make a copy through them several times slower than the memory.)
    fn copy_seconds(bytes: usize, timer: &Timer, device: &Self::Device) -> f64 {
        let n = (bytes / 8).max(1);
        let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut dst = vec![0f32; n];
        timer.time::<Self, _>(device, Sync::Batched, 0, || {
            dst.par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
        })
    }
}

/// Command-line options.
struct Args {
    device: String,
    quick: bool,
    reps: usize,
    rows: Option<usize>,
    only: Vec<String>,
}

fn parse_args() -> Args {
    let mut args = Args {
        device: "wgpu".into(),
        quick: false,
        reps: 3,
        rows: None,
        only: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    let number = |v: Option<String>, what: &str| -> usize {
        v.and_then(|v| v.parse().ok())
            .unwrap_or_else(|| usage(&format!("{what} takes a positive integer")))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--device" => {
                args.device = it.next().unwrap_or_else(|| usage("--device takes a value"))
            }
            "--quick" => args.quick = true,
            "--reps" => args.reps = number(it.next(), "--reps").max(1),
            "--rows" => args.rows = Some(number(it.next(), "--rows").max(1)),
            "--only" => {
                let list = it.next().unwrap_or_else(|| usage("--only takes a list"));
                args.only = list.split(',').map(str::to_string).collect();
            }
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            other => usage(&format!("unknown argument `{other}`")),
        }
    }
    args
}

fn usage(why: &str) -> ! {
    eprintln!("error: {why}");
    eprintln!(
        "usage: kernels [--device wgpu|cpu|cuda] [--quick] [--reps N] [--rows N] [--only NAME,...]"
    );
    std::process::exit(2)
}

fn main() {
    let args = parse_args();
    match args.device.as_str() {
        "wgpu" => {
            use burn::backend::wgpu::WgpuDevice;
            let device = WgpuDevice::default();
            // Before any tensor: registers the device's client and reports its adapter.
            let machine = machine::wgpu(&device);
            type Cube = CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>;
            bench::<Cube, burn::backend::Wgpu>(&args, &machine, &device, Some(&device));
        }
        "cpu" => {
            let device = Default::default();
            bench::<Flex, Flex>(&args, &machine::cpu(), &device, None);
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            use burn::backend::cuda::CudaDevice;
            let device = CudaDevice::default();
            type Cube = CubeBackend<burn::cubecl::cuda::CudaRuntime, f32, i32, u8>;
            bench::<Cube, burn::backend::Cuda>(&args, &machine::cuda(), &device, Some(&device));
        }
        #[cfg(not(feature = "cuda"))]
        "cuda" => usage("this build has no CUDA: build with `--features cuda`"),
        other => usage(&format!("unknown device `{other}` (wgpu, cpu, cuda)")),
    }
}

/// Every selected case: fused on `F`, the reference on `F` (eager) and, when `fusion` is
/// given, on its fusion backend `R`; then the table.
fn bench<F: Fused + NmsKernel + DcnKernel, R: Backend>(
    args: &Args,
    machine: &str,
    device: &F::Device,
    fusion: Option<&R::Device>,
) {
    let mut sizes = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    if let Some(rows) = args.rows {
        sizes = sizes.with_rows(rows);
    }
    let timer = Timer {
        reps: args.reps,
        warmup: 3,
        target: Duration::from_millis(if args.quick { 30 } else { 50 }),
        max_calls: 200,
        memory_budget: if args.quick { 1 << 30 } else { 8 << 30 },
    };
    let cases: Vec<Case> = Case::ALL
        .into_iter()
        .filter(|c| {
            args.only.is_empty() || args.only.iter().any(|o| c.name().starts_with(o.as_str()))
        })
        .collect();

    // Header first and each row as soon as it is measured, so a run cut short by a time
    // limit still reports what it finished.
    println!("machine: {machine}");
    println!(
        "timing: median of {} repetitions after {} warm-up calls; fused, eager and copy: calls \
         batched between syncs; Burn fusion and optimizer steps: a sync after every call",
        timer.reps, timer.warmup
    );
    println!();
    print!("{}", table::header());
    let mut copies: HashMap<usize, f64> = HashMap::new();
    let mut forward: Option<Row> = None;
    for case in cases {
        eprintln!("{} ...", case.name());
        let bytes = sizes.bytes(case);
        let fused = runs::fused::<F>(case, &sizes, &timer, device);
        let eager = runs::reference::<F>(case, &sizes, &timer, device, Sync::Batched);
        let fusion = fusion.map(|d| runs::reference::<R>(case, &sizes, &timer, d, Sync::EachCall));
        let copy = *copies
            .entry(bytes)
            .or_insert_with(|| F::copy_seconds(bytes, &timer, device));
        let row = Row {
            kernel: case.name().into(),
            shape: sizes.describe(case),
            bytes,
            fused,
            fusion,
            eager,
            copy,
        };
        print!("{}", table::line(&row));
        // LayerNorm forward + backward: the figure PyTorch is quoted with.
        match case {
            Case::LayerNormFwd => forward = Some(row),
            Case::LayerNormBwd => {
                if let Some(fwd) = &forward {
                    print!("{}", table::line(&fwd.plus(&row, "layer_norm fwd+bwd")));
                }
            }
            _ => {}
        }
        std::io::Write::flush(&mut std::io::stdout()).ok();
    }
    if args.only.is_empty() || args.only.iter().any(|o| o == "multi_apply") {
        eprintln!("multi_apply ...");
        // On the fusion backend where there is one: what detection heads run on.
        match fusion {
            Some(d) => multi_apply::bench::<R>(sizes.layer_norm[0], &timer, d),
            None => multi_apply::bench::<F>(sizes.layer_norm[0], &timer, device),
        }
    }
    if args.only.is_empty() || args.only.iter().any(|o| o == "nms") {
        eprintln!("nms ...");
        nms::bench::<F>(&timer, device);
    }
    if args.only.is_empty() || args.only.iter().any(|o| o == "dcn") {
        eprintln!("dcn ...");
        dcn::bench::<F>(args.quick, &timer, device);
    }
}
