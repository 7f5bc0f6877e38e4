//! The results table (markdown).

/// One row: median seconds per call of each path, and the bytes the kernel must move.
#[derive(Clone, Debug)]
pub struct Row {
    /// Kernel and direction.
    pub kernel: String,
    /// Shape column.
    pub shape: String,
    /// Bytes read and written by one call.
    pub bytes: usize,
    /// Fused kernel, seconds.
    pub fused: f64,
    /// Reference on Burn's fusion backend, seconds (none on the CPU).
    pub fusion: Option<f64>,
    /// Reference on the eager backend, seconds.
    pub eager: f64,
    /// Copy of `bytes`, seconds.
    pub copy: f64,
}

impl Row {
    /// The sum of two rows (forward + backward).
    pub fn plus(&self, other: &Row, kernel: &str) -> Row {
        Row {
            kernel: kernel.into(),
            shape: self.shape.clone(),
            bytes: self.bytes + other.bytes,
            fused: self.fused + other.fused,
            fusion: self.fusion.zip(other.fusion).map(|(a, b)| a + b),
            eager: self.eager + other.eager,
            copy: self.copy + other.copy,
        }
    }
}

/// The table's header: times in µs, speed-up of the fused kernel over the faster reference,
/// its GB/s and its share of the copy bandwidth (copy time / fused time).
pub fn header() -> String {
    "| kernel | shape | MB moved | fused µs | Burn fusion µs | Burn eager µs | speed-up | \
     fused GB/s | copy GB/s | % of copy |\n\
     |---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n"
        .into()
}

/// One row of the table (`—` where there is no fusion backend).
pub fn line(r: &Row) -> String {
    let best_ref = r.fusion.map_or(r.eager, |f| f.min(r.eager));
    format!(
        "| {} | {} | {:.1} | {} | {} | {} | {:.2}× | {:.1} | {:.1} | {:.0}% |\n",
        r.kernel,
        r.shape,
        r.bytes as f64 / 1e6,
        micros(r.fused),
        r.fusion.map_or_else(|| "—".into(), micros),
        micros(r.eager),
        best_ref / r.fused,
        r.bytes as f64 / r.fused / 1e9,
        r.bytes as f64 / r.copy / 1e9,
        100.0 * r.copy / r.fused,
    )
}

/// Seconds as µs with 3 significant digits or whole µs.
fn micros(seconds: f64) -> String {
    let us = seconds * 1e6;
    if us < 100.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}
