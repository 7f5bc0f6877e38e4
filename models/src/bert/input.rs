//! [`BertInput`]: token ids, positions and the attention mask of a (possibly packed) batch.

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor};

/// Added to the attention score of a key a query must not see: as Hugging Face does
/// (`torch.finfo(float32).min`), so `softmax` gives it exactly zero weight.
pub const MASKED_SCORE: f32 = f32::MIN;

/// One batch of `rows` rows of `seq` tokens, on the device.
///
/// A row holds one sample (padded batches) or several (packed batches): `segment_ids` says
/// which, and a token attends only to tokens of its own segment, so samples packed in one row
/// do not see each other and nobody attends to padding.
#[derive(Clone, Debug)]
pub struct BertInput<B: Backend> {
    /// WordPiece ids, `[rows, seq]`.
    pub input_ids: Tensor<B, 2, Int>,
    /// Segment A/B ids (`token_type_ids`), `[rows, seq]`.
    pub token_type_ids: Tensor<B, 2, Int>,
    /// Position of each token inside its sample (0 at its `[CLS]`), `[rows, seq]`.
    pub position_ids: Tensor<B, 2, Int>,
    /// Additive attention bias, f32 `[rows, 1, seq, seq]`: 0 where query and key share a
    /// segment, [`MASKED_SCORE`] elsewhere.
    pub attention_bias: Tensor<B, 4>,
    /// Flat index `row · seq + position` of every sample's `[CLS]` token, `[samples]`: the
    /// classification head reads these, so its output has one row per sample, in this order.
    pub cls_index: Tensor<B, 1, Int>,
}

impl<B: Backend> BertInput<B> {
    /// Builds the attention bias from `segment_ids` `[rows, seq]` (0 = padding, k = k-th sample
    /// of the row): a block-diagonal mask per row.
    pub fn new(
        input_ids: Tensor<B, 2, Int>,
        token_type_ids: Tensor<B, 2, Int>,
        position_ids: Tensor<B, 2, Int>,
        segment_ids: Tensor<B, 2, Int>,
        cls_index: Tensor<B, 1, Int>,
    ) -> Self {
        let attention_bias = attention_bias(segment_ids);
        Self {
            input_ids,
            token_type_ids,
            position_ids,
            attention_bias,
            cls_index,
        }
    }

    /// `[rows, seq]`.
    pub fn dims(&self) -> [usize; 2] {
        self.input_ids.dims()
    }
}

/// segment_ids `[rows, seq]` → f32 `[rows, 1, seq, seq]`: 0 where query `i` and key `j` have the
/// same segment id, [`MASKED_SCORE`] elsewhere. Padding (segment 0) attends to padding only,
/// which keeps every softmax row finite and never reaches a real token.
pub fn attention_bias<B: Backend>(segment_ids: Tensor<B, 2, Int>) -> Tensor<B, 4> {
    let [rows, seq] = segment_ids.dims();
    let queries = segment_ids
        .clone()
        .reshape([rows, seq, 1])
        .expand([rows, seq, seq]);
    let keys = segment_ids.reshape([rows, 1, seq]).expand([rows, seq, seq]);
    let same: Tensor<B, 3, Bool> = queries.equal(keys);
    Tensor::<B, 3>::zeros([rows, seq, seq], &same.device())
        .mask_fill(same.bool_not(), MASKED_SCORE)
        .reshape([rows, 1, seq, seq])
}
