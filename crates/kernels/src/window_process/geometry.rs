//! [`WindowGeometry`]: the sizes that define one block's window processing, and the index maps
//! both the reference and the tests derive from them.

/// Map size, window and cyclic shift of one Swin block.
///
/// `shift` is the amount timm rolls the map by *backwards* before partitioning
/// (`torch.roll(x, (−sh, −sw))`), `[0, 0]` for unshifted blocks; any value is taken modulo the
/// map size. The map is zero-padded after the shift to `[nh · wh, nw · ww]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowGeometry {
    /// `[h, w]` of the map.
    pub resolution: [usize; 2],
    /// `[wh, ww]`.
    pub window: [usize; 2],
    /// `[sh, sw]`.
    pub shift: [usize; 2],
}

impl WindowGeometry {
    /// `[nh, nw]`: windows per column and per row, `⌈h / wh⌉` and `⌈w / ww⌉`.
    pub fn windows(&self) -> [usize; 2] {
        [0, 1].map(|d| self.resolution[d].div_ceil(self.window[d]))
    }

    /// Windows per image, `nh · nw`.
    pub fn windows_per_image(&self) -> usize {
        let [nh, nw] = self.windows();
        nh * nw
    }

    /// Tokens per window, `wh · ww`.
    pub fn window_area(&self) -> usize {
        self.window[0] * self.window[1]
    }

    /// The shift reduced modulo the map size, as the kernels take it.
    pub fn shift_in_map(&self) -> [usize; 2] {
        [0, 1].map(|d| self.shift[d] % self.resolution[d].max(1))
    }

    /// Panics with a message naming the value unless every size is positive.
    pub fn check(&self) {
        assert!(
            self.resolution.iter().chain(&self.window).all(|&s| s > 0),
            "window_process: resolution {:?} and window {:?} must be positive",
            self.resolution,
            self.window
        );
    }

    /// For each token of one image's windows, in output order (`nh · nw · wh · ww` of them),
    /// the map position `y · w + x` it reads, or `None` for padding.
    pub fn process_sources(&self) -> Vec<Option<usize>> {
        self.check();
        let [h, w] = self.resolution;
        let [wh, ww] = self.window;
        let [nh, nw] = self.windows();
        let [sh, sw] = self.shift_in_map();
        let mut sources = Vec::with_capacity(nh * nw * wh * ww);
        for wy in 0..nh {
            for wx in 0..nw {
                for ty in 0..wh {
                    for tx in 0..ww {
                        let (py, px) = (wy * wh + ty, wx * ww + tx);
                        sources
                            .push((py < h && px < w).then(|| ((py + sh) % h) * w + (px + sw) % w));
                    }
                }
            }
        }
        sources
    }

    /// For each map position `y · w + x` of one image, the window token (in the order of
    /// [`Self::process_sources`]) it is read back from.
    pub fn reverse_sources(&self) -> Vec<usize> {
        let [h, w] = self.resolution;
        let mut sources = vec![usize::MAX; h * w];
        for (token, source) in self.process_sources().into_iter().enumerate() {
            if let Some(position) = source {
                sources[position] = token;
            }
        }
        sources
    }
}
