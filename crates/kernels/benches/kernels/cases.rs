//! What is measured: the kernels, their shapes and the bytes each one must move.
//!
//! Bytes count every read of an input and every write of an output once (f32, 4 bytes an
//! element), the least any implementation must move; intermediate buffers (the column
//! partials of the parameter gradients, Burn's temporaries) are not counted.

/// One measured kernel call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// LayerNorm forward with statistics: `x, gamma, beta → y, mean, rstd`.
    LayerNormFwd,
    /// LayerNorm backward: `x, gamma, dy, mean, rstd → dx, dgamma, dbeta`.
    LayerNormBwd,
    /// Bias + exact GELU forward: `x, bias → y`.
    BiasGeluFwd,
    /// Bias + exact GELU backward: `x, bias, dy → dx, dbias`.
    BiasGeluBwd,
    /// QuickGELU forward: `x → y`.
    QuickGeluFwd,
    /// QuickGELU backward: `x, dy → dx`.
    QuickGeluBwd,
    /// Bias + dropout + residual add forward: `x, bias, residual → y` (p = 0.1).
    BdaFwd,
    /// Its backward: `dy → dx, dbias` (the residual's gradient is `dy` itself).
    BdaBwd,
    /// One AdamW step over the BERT parameter list: `p, g, m, v → p, m, v`.
    Adam,
    /// One SGD-momentum step over the ResNet-50 parameter list: `p, g, buf → p, buf`.
    Sgd,
    /// Swin shift + window partition: `x → windows`.
    WindowProcess,
    /// Swin window merge + reverse shift: `windows → x` (also the process's backward).
    WindowProcessReverse,
    /// Swin attention bias + mask + softmax forward: `scores, table, mask → probs`.
    SwinSoftmaxFwd,
    /// Its backward to the scores: `probs, dprobs → dscores` (the table's small reduction,
    /// Burn ops on both paths, is not timed).
    SwinSoftmaxBwd,
}

impl Case {
    /// Every case, in table order.
    pub const ALL: [Case; 14] = [
        Case::LayerNormFwd,
        Case::LayerNormBwd,
        Case::BiasGeluFwd,
        Case::BiasGeluBwd,
        Case::QuickGeluFwd,
        Case::QuickGeluBwd,
        Case::BdaFwd,
        Case::BdaBwd,
        Case::Adam,
        Case::Sgd,
        Case::WindowProcess,
        Case::WindowProcessReverse,
        Case::SwinSoftmaxFwd,
        Case::SwinSoftmaxBwd,
    ];

    /// Name in the table (also what `--only` matches).
    pub fn name(self) -> &'static str {
        match self {
            Case::LayerNormFwd => "layer_norm fwd",
            Case::LayerNormBwd => "layer_norm bwd",
            Case::BiasGeluFwd => "bias_gelu fwd",
            Case::BiasGeluBwd => "bias_gelu bwd",
            Case::QuickGeluFwd => "quick_gelu fwd",
            Case::QuickGeluBwd => "quick_gelu bwd",
            Case::BdaFwd => "bias_dropout_add fwd",
            Case::BdaBwd => "bias_dropout_add bwd",
            Case::Adam => "adamw (multi-tensor)",
            Case::Sgd => "sgd momentum (multi-tensor)",
            Case::WindowProcess => "window_process",
            Case::WindowProcessReverse => "window_process reverse",
            Case::SwinSoftmaxFwd => "swin_fmha softmax fwd",
            Case::SwinSoftmaxBwd => "swin_fmha softmax bwd",
        }
    }
}

/// The shapes of one run.
#[derive(Clone, Debug)]
pub struct Sizes {
    /// LayerNorm `[rows, width]`.
    pub layer_norm: [usize; 2],
    /// Bias + GELU and QuickGELU `[rows, width]`.
    pub gelu: [usize; 2],
    /// Bias + dropout + add `[rows, width]`.
    pub bda: [usize; 2],
    /// The Adam group's parameter shapes, and what they are.
    pub adam: (Vec<Vec<usize>>, &'static str),
    /// The SGD group's parameter shapes, and what they are.
    pub sgd: (Vec<Vec<usize>>, &'static str),
    /// The Swin cases' stage.
    pub swin: SwinStage,
}

/// One shifted Swin stage: `[batch, side, side, channels]` maps, `window × window` windows
/// shifted by `window / 2`, `heads` attention heads.
#[derive(Clone, Copy, Debug)]
pub struct SwinStage {
    /// Images.
    pub batch: usize,
    /// Map side (tokens).
    pub side: usize,
    /// Channels.
    pub channels: usize,
    /// Window side (tokens).
    pub window: usize,
    /// Attention heads.
    pub heads: usize,
}

impl SwinStage {
    /// Swin-T's first stage (56 × 56 tokens, 96 channels, 3 heads, 7 × 7 windows).
    const fn swin_t_stage1(batch: usize) -> Self {
        Self {
            batch,
            side: 56,
            channels: 96,
            window: 7,
            heads: 3,
        }
    }

    /// Elements of the map, `batch · side² · channels` (no padding at these sizes).
    pub fn map_len(&self) -> usize {
        self.batch * self.side * self.side * self.channels
    }

    /// Windows over the batch.
    pub fn windows(&self) -> usize {
        self.batch * (self.side / self.window).pow(2)
    }

    /// Tokens per window.
    pub fn tokens(&self) -> usize {
        self.window * self.window
    }

    /// Elements of the attention scores, `windows · heads · tokens²`.
    pub fn scores_len(&self) -> usize {
        self.windows() * self.heads * self.tokens().pow(2)
    }
}

impl Sizes {
    /// The shapes of issue 6: BERT-base activations at 8192 tokens (batch 64 × 128), BERT-base
    /// parameters for AdamW, ResNet-50 parameters for SGD; Swin-T's first stage at batch 64.
    pub fn full() -> Self {
        Self {
            layer_norm: [8192, 768],
            gelu: [8192, 3072],
            bda: [8192, 768],
            adam: (bert(30522, 512, 768, 12, 3072), "BERT-base"),
            sgd: (resnet50(64), "ResNet-50"),
            swin: SwinStage::swin_t_stage1(64),
        }
    }

    /// Smaller shapes for slow devices (lavapipe, CPU): 1024 tokens, BERT-tiny (2 layers,
    /// hidden 128) parameters, ResNet-50 at a quarter of its width, Swin-T's first stage at
    /// batch 4.
    pub fn quick() -> Self {
        Self {
            layer_norm: [1024, 768],
            gelu: [1024, 3072],
            bda: [1024, 768],
            adam: (bert(30522, 512, 128, 2, 512), "BERT-tiny"),
            sgd: (resnet50(16), "ResNet-50 ×¼ width"),
            swin: SwinStage::swin_t_stage1(4),
        }
    }

    /// Replaces the row count (tokens) of the activation shapes.
    pub fn with_rows(mut self, rows: usize) -> Self {
        self.layer_norm[0] = rows;
        self.gelu[0] = rows;
        self.bda[0] = rows;
        self
    }

    /// The shape column of `case`.
    pub fn describe(&self, case: Case) -> String {
        let params = |(shapes, what): &(Vec<Vec<usize>>, &str)| {
            let n: usize = shapes.iter().map(|s| s.iter().product::<usize>()).sum();
            format!("{what}: {} tensors, {:.1}M", shapes.len(), n as f64 / 1e6)
        };
        match case {
            Case::LayerNormFwd | Case::LayerNormBwd => dims(&self.layer_norm),
            Case::BiasGeluFwd | Case::BiasGeluBwd | Case::QuickGeluFwd | Case::QuickGeluBwd => {
                dims(&self.gelu)
            }
            Case::BdaFwd | Case::BdaBwd => dims(&self.bda),
            Case::Adam => params(&self.adam),
            Case::Sgd => params(&self.sgd),
            Case::WindowProcess | Case::WindowProcessReverse => {
                let s = self.swin;
                format!("{}×{}²×{}", s.batch, s.side, s.channels)
            }
            Case::SwinSoftmaxFwd | Case::SwinSoftmaxBwd => {
                let s = self.swin;
                format!("{}×{}×{}²", s.windows(), s.heads, s.tokens())
            }
        }
    }

    /// Bytes `case` must read and write (see the module docs).
    pub fn bytes(&self, case: Case) -> usize {
        let numel = |shapes: &[Vec<usize>]| -> usize {
            shapes.iter().map(|s| s.iter().product::<usize>()).sum()
        };
        let floats = match case {
            Case::LayerNormFwd | Case::LayerNormBwd => {
                let [rows, width] = self.layer_norm;
                let n = rows * width;
                if case == Case::LayerNormFwd {
                    // x, gamma, beta → y, mean, rstd.
                    2 * n + 2 * width + 2 * rows
                } else {
                    // x, dy, gamma, mean, rstd → dx, dgamma, dbeta.
                    3 * n + 3 * width + 2 * rows
                }
            }
            Case::BiasGeluFwd | Case::BiasGeluBwd | Case::QuickGeluFwd | Case::QuickGeluBwd => {
                let [rows, width] = self.gelu;
                let n = rows * width;
                match case {
                    Case::BiasGeluFwd => 2 * n + width,
                    Case::BiasGeluBwd => 3 * n + 2 * width,
                    Case::QuickGeluFwd => 2 * n,
                    _ => 3 * n,
                }
            }
            Case::BdaFwd | Case::BdaBwd => {
                let [rows, width] = self.bda;
                let n = rows * width;
                if case == Case::BdaFwd {
                    // x, residual, bias → y.
                    3 * n + width
                } else {
                    // dy → dx, dbias (the mask is regenerated, not read).
                    2 * n + width
                }
            }
            Case::Adam => 7 * numel(&self.adam.0),
            Case::Sgd => 5 * numel(&self.sgd.0),
            Case::WindowProcess | Case::WindowProcessReverse => 2 * self.swin.map_len(),
            Case::SwinSoftmaxFwd => {
                // scores → probs; the table and the per-window mask are small and cached.
                let s = self.swin;
                let table = (2 * s.window - 1).pow(2) * s.heads;
                let mask = (s.side / s.window).pow(2) * s.tokens().pow(2);
                2 * s.scores_len() + table + mask
            }
            Case::SwinSoftmaxBwd => 3 * self.swin.scores_len(),
        };
        4 * floats
    }
}

/// `[a, b]` as `8192×768`.
fn dims(d: &[usize; 2]) -> String {
    format!("{}×{}", d[0], d[1])
}

/// Parameter shapes of a BERT encoder with a pooler and a 2-class head, in the order of
/// Hugging Face's `BertForSequenceClassification`: embeddings (word, position, token type,
/// LayerNorm), per layer the query/key/value/output projections, attention LayerNorm,
/// intermediate and output projections and output LayerNorm, then pooler and classifier.
/// BERT-base (30522, 512, 768, 12, 3072): 201 tensors, 109,483,778 parameters.
pub fn bert(
    vocab: usize,
    positions: usize,
    hidden: usize,
    layers: usize,
    intermediate: usize,
) -> Vec<Vec<usize>> {
    let mut shapes = vec![
        vec![vocab, hidden],
        vec![positions, hidden],
        vec![2, hidden],
        vec![hidden],
        vec![hidden],
    ];
    for _ in 0..layers {
        for _ in 0..4 {
            shapes.extend([vec![hidden, hidden], vec![hidden]]);
        }
        shapes.extend([vec![hidden], vec![hidden]]);
        shapes.extend([vec![intermediate, hidden], vec![intermediate]]);
        shapes.extend([vec![hidden, intermediate], vec![hidden]]);
        shapes.extend([vec![hidden], vec![hidden]]);
    }
    shapes.extend([vec![hidden, hidden], vec![hidden]]);
    shapes.extend([vec![2, hidden], vec![2]]);
    shapes
}

/// Parameter shapes of torchvision's ResNet-50 with base width `width` (64 is ResNet-50:
/// 161 tensors, 25,557,032 parameters): convolutions, BatchNorm weight and bias, the
/// 1000-class head.
pub fn resnet50(width: usize) -> Vec<Vec<usize>> {
    let bn = |c: usize| [vec![c], vec![c]];
    let mut shapes = vec![vec![width, 3, 7, 7]];
    shapes.extend(bn(width));
    let mut channels = width;
    for (stage, blocks) in [3, 4, 6, 3].into_iter().enumerate() {
        let planes = width << stage;
        let out = planes * 4;
        for block in 0..blocks {
            shapes.push(vec![planes, channels, 1, 1]);
            shapes.extend(bn(planes));
            shapes.push(vec![planes, planes, 3, 3]);
            shapes.extend(bn(planes));
            shapes.push(vec![out, planes, 1, 1]);
            shapes.extend(bn(out));
            if block == 0 {
                shapes.push(vec![out, channels, 1, 1]);
                shapes.extend(bn(out));
            }
            channels = out;
        }
    }
    shapes.extend([vec![1000, channels], vec![1000]]);
    shapes
}
