//! Host batches → device tensors: [`Upload`], what a host batch becomes on a device.
//!
//! Images travel as their u8 pixels, a quarter of the bytes of normalised f32, and are
//! converted and normalised on the device (`x · scale[c] + shift[c]`: one element-wise chain
//! that Burn's fusion compiles into one kernel). Backends without 8-bit integer tensors
//! (WGSL, i.e. wgpu on most drivers) receive the same bytes packed four to an i32 and unpack
//! them with shifts and masks. Before the upload the bytes are offered to the backend as
//! staging memory (`Backend::staging`): pinned host memory on CUDA, from which the copy to
//! the device is asynchronous; wgpu has none and the CPU needs none.

use burn::tensor::backend::Backend;
use burn::tensor::{DType, ElementConversion, Int, Tensor, TensorData};
use burnacc_datasets::text::TextBatch;
use burnacc_datasets::{HostBatch, Normalize};
use burnacc_models::BertInput;

/// A host batch that can be put on a device of `B`, from any thread.
pub trait Upload<B: Backend>: Send + 'static {
    /// The batch on the device.
    type OnDevice: Clone + Send + 'static;

    /// Copies the batch to `device`, ready for the model.
    fn upload(self, device: &B::Device) -> Self::OnDevice;
}

/// An image batch on the device.
#[derive(Clone, Debug)]
pub struct ImageBatch<B: Backend> {
    /// `[batch, channels, height, width]` f32, normalised.
    pub images: Tensor<B, 4>,
    /// Class indices `[batch]` in the backend's int dtype.
    pub labels: Tensor<B, 1, Int>,
}

/// A text batch on the device.
#[derive(Clone, Debug)]
pub struct TextInputBatch<B: Backend> {
    /// Token, segment and position ids and the `[CLS]` indices.
    pub input: BertInput<B>,
    /// Class indices `[samples]`.
    pub labels: Tensor<B, 1, Int>,
}

impl<B: Backend> Upload<B> for HostBatch {
    type OnDevice = ImageBatch<B>;

    fn upload(self, device: &B::Device) -> ImageBatch<B> {
        let n = self.labels.len();
        let labels = Tensor::from_data(TensorData::new(self.labels, [n]), device);
        let images = normalize_on_device(self.pixels, self.shape, &self.normalize, device);
        ImageBatch { images, labels }
    }
}

impl<B: Backend> Upload<B> for TextBatch {
    type OnDevice = TextInputBatch<B>;

    /// Ids `[rows, seq_len]`; the attention bias is built on the device from the segment ids.
    fn upload(self, device: &B::Device) -> TextInputBatch<B> {
        let shape = [self.rows, self.seq_len];
        let ids = |values: Vec<i64>| {
            Tensor::<B, 2, Int>::from_data(TensorData::new(values, shape), device)
        };
        let samples = self.labels.len();
        let input = BertInput::new(
            ids(self.input_ids),
            ids(self.token_type_ids),
            ids(self.position_ids),
            ids(self.segment_ids),
            Tensor::from_data(TensorData::new(self.cls_index, [samples]), device),
        );
        let labels = Tensor::from_data(TensorData::new(self.labels, [samples]), device);
        TextInputBatch { input, labels }
    }
}

/// How u8 pixels travel to a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelTransfer {
    /// As a u8 tensor (the CPU, CUDA, Vulkan SPIR-V).
    Bytes,
    /// Four to a little-endian i32 word, unpacked on the device (backends without 8-bit
    /// tensors: WGSL).
    PackedWords,
}

impl PixelTransfer {
    /// [`PixelTransfer::Bytes`] where the device has general u8 tensors.
    pub fn for_device<B: Backend>(device: &B::Device) -> Self {
        if B::supports_dtype(device, DType::U8) {
            PixelTransfer::Bytes
        } else {
            PixelTransfer::PackedWords
        }
    }
}

/// pixels: `[batch, channels, height, width]` u8 on the host → the same shape f32 on
/// `device`, `(x / 255 - mean[c]) / std[c]` (equal to [`HostBatch::normalized`] within f32
/// rounding: the device multiplies by `1 / (255 std)` and adds `-mean / std`). Uploads
/// `pixels.len()` bytes (rounded up to a multiple of 4).
pub fn normalize_on_device<B: Backend>(
    pixels: Vec<u8>,
    shape: [usize; 4],
    normalize: &Normalize,
    device: &B::Device,
) -> Tensor<B, 4> {
    let channels = shape[1];
    assert_eq!(
        normalize.channels(),
        channels,
        "a {channels}-channel batch with a {}-channel normalisation",
        normalize.channels()
    );
    let transfer = PixelTransfer::for_device::<B>(device);
    let values = upload_pixels::<B>(pixels, shape, transfer, device).float();
    let per_channel = |v: Vec<f32>| {
        Tensor::<B, 1>::from_data(TensorData::new(v, [channels]), device)
            .reshape([1, channels, 1, 1])
    };
    let (scale, shift): (Vec<f32>, Vec<f32>) = normalize
        .mean()
        .iter()
        .zip(normalize.std())
        .map(|(&mean, &std)| (1.0 / (255.0 * std), -mean / std))
        .unzip();
    values * per_channel(scale) + per_channel(shift)
}

/// pixels (`shape`, u8) → an int tensor of the same values on `device`, sent as `transfer`
/// says through the backend's staging memory.
pub fn upload_pixels<B: Backend>(
    mut pixels: Vec<u8>,
    shape: [usize; 4],
    transfer: PixelTransfer,
    device: &B::Device,
) -> Tensor<B, 4, Int> {
    if transfer == PixelTransfer::Bytes {
        let data = staged::<B>(TensorData::new(pixels, shape), device);
        return Tensor::from_data(data, (device, DType::U8));
    }
    // Byte `k` of word `j` is value `4j + k`.
    let len = pixels.len();
    pixels.resize(len.next_multiple_of(4), 0);
    let words: Vec<i32> = pixels
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let count = words.len();
    let data = staged::<B>(TensorData::new(words, [count]), device);
    let words = Tensor::<B, 1, Int>::from_data(data, (device, DType::I32));
    // An arithmetic shift of a negative word fills with ones; the mask keeps the byte.
    let byte = |k: i32| {
        words
            .clone()
            .bitwise_right_shift_scalar((8 * k).elem())
            .bitwise_and_scalar(255.elem())
    };
    Tensor::stack::<2>((0..4).map(byte).collect(), 1)
        .reshape([4 * count])
        .slice(0..len)
        .reshape(shape)
}

/// `data` moved into the backend's staging memory where it has some (pinned on CUDA).
fn staged<B: Backend>(mut data: TensorData, device: &B::Device) -> TensorData {
    B::staging(std::iter::once(&mut data), device);
    data
}

/// Number of correct arg-max predictions, as a one-element device tensor (no host read).
///
/// logits: `[batch, classes]`, labels: `[batch]` → `[1]`.
pub fn correct_count<B: Backend>(
    logits: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
) -> Tensor<B, 1, Int> {
    let predicted = logits.argmax(1).squeeze_dim::<1>(1);
    predicted.equal(labels).int().sum()
}
