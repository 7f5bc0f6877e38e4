//! Sequence packing changes the layout, not the result: a BERT gives the same per-sample logits,
//! loss and gradients on a packed batch (several samples per row, block-diagonal attention,
//! positions restarting per sample) as on the same samples padded one per row.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::Tensor;
use burnacc_datasets::text::{TextBatch, pack_batch, pad_batch};
use burnacc_models::bert::{BertConfig, BertForSequenceClassification};
use burnacc_tests::rng::HostRng;
use burnacc_train::trainer::Upload;

type B = Autodiff<Flex>;

/// A small BERT (2 layers of width 64, 4 heads) without dropout, so that the two layouts draw
/// nothing and must agree.
fn small_bert() -> BertForSequenceClassification<B> {
    let config = BertConfig::new()
        .with_vocab_size(500)
        .with_hidden_size(64)
        .with_num_hidden_layers(2)
        .with_num_attention_heads(4)
        .with_intermediate_size(128)
        .with_max_position_embeddings(64)
        .with_hidden_dropout_prob(0.0)
        .with_attention_probs_dropout_prob(0.0);
    BertForSequenceClassification::new(&config, 3, &FlexDevice)
}

/// Twelve token sequences of lengths 3…40 (`[CLS]` = 1 first, `[SEP]` = 2 last).
fn samples() -> (Vec<Vec<u32>>, Vec<usize>) {
    let mut rng = HostRng::new(7);
    let lengths = [3, 40, 7, 12, 25, 5, 31, 9, 18, 4, 22, 14];
    let samples = lengths
        .iter()
        .map(|&n| {
            let mut ids = vec![1];
            ids.extend((0..n - 2).map(|_| 3 + rng.below(490) as u32));
            ids.push(2);
            ids
        })
        .collect();
    let labels = (0..lengths.len()).map(|i| i % 3).collect();
    (samples, labels)
}

fn batches() -> (TextBatch, TextBatch) {
    let (samples, labels) = samples();
    let views: Vec<&[u32]> = samples.iter().map(Vec::as_slice).collect();
    let padded = pad_batch(&views, &labels);
    let packed = pack_batch(&views, &labels, 48).unwrap();
    (padded, packed)
}

fn max_abs_diff(a: Tensor<B, 2>, b: Tensor<B, 2>) -> (f32, f32) {
    let scale = b.clone().abs().max().into_scalar();
    ((a - b).abs().max().into_scalar(), scale)
}

#[test]
fn packing_cuts_padding_on_a_mixed_length_batch() {
    let (padded, packed) = batches();
    assert_eq!(padded.rows, 12);
    assert!(packed.rows < padded.rows, "{} rows packed", packed.rows);
    eprintln!(
        "padding: {:.1}% padded ({}×{}), {:.1}% packed ({}×{})",
        100.0 * padded.padding_fraction(),
        padded.rows,
        padded.seq_len,
        100.0 * packed.padding_fraction(),
        packed.rows,
        packed.seq_len
    );
    assert!(padded.padding_fraction() > 0.5);
    assert!(packed.padding_fraction() < 0.15);
}

#[test]
fn packed_and_padded_batches_give_the_same_logits_loss_and_gradients() {
    let model = small_bert();
    let (padded, packed) = batches();
    let labels = Tensor::from_data(
        burn::tensor::TensorData::new(padded.labels.clone(), [padded.labels.len()]),
        &FlexDevice,
    );
    let loss_fn = CrossEntropyLossConfig::new().init(&FlexDevice);
    let run = |batch: TextBatch| {
        let input = Upload::<B>::upload(batch, &FlexDevice).input;
        let logits = model.forward(&input);
        let loss = loss_fn.forward(logits.clone(), labels.clone());
        let grads = loss.backward();
        (logits, loss, grads)
    };
    let (logits_padded, loss_padded, grads_padded) = run(padded);
    let (logits_packed, loss_packed, grads_packed) = run(packed);

    let (diff, logit_scale) = max_abs_diff(logits_packed, logits_padded);
    eprintln!("logits: max |packed − padded| {diff:.2e} (max |logit| {logit_scale:.3})");
    assert!(
        diff <= 1e-5 * logit_scale.max(1.0),
        "logits differ by {diff}"
    );
    let (a, b) = (loss_packed.into_scalar(), loss_padded.into_scalar());
    assert!(
        (a - b).abs() <= 1e-6 * b.abs(),
        "loss {a} packed vs {b} padded"
    );

    // Gradients of the first and last layers' weights and of the embedding tables.
    let params: [(&str, Tensor<B, 2>); 4] = [
        (
            "word_embeddings",
            model.bert.embeddings.word_embeddings.weight.val(),
        ),
        (
            "position_embeddings",
            model.bert.embeddings.position_embeddings.weight.val(),
        ),
        (
            "layer 0 query",
            model.bert.encoder.layer[0]
                .attention
                .self_attn
                .query
                .weight
                .val(),
        ),
        (
            "layer 1 output",
            model.bert.encoder.layer[1].output.dense.weight.val(),
        ),
    ];
    for (name, param) in params {
        let g_packed = param.grad(&grads_packed).expect(name);
        let g_padded = param.grad(&grads_padded).expect(name);
        let diff = (g_packed - g_padded.clone()).abs().max().into_scalar();
        let scale = g_padded.abs().max().into_scalar();
        eprintln!("grad {name}: max |packed − padded| {diff:.2e} (max {scale:.3e})");
        assert!(scale > 0.0, "{name} has no gradient");
        assert!(
            diff <= 1e-4 * scale,
            "{name}: gradients differ by {diff} (max {scale})"
        );
    }
    // The inference model (no autodiff) agrees too.
    let inner = model.valid();
    let (padded, packed) = batches();
    let logits = |batch: TextBatch| {
        let input = Upload::<Flex>::upload(batch, &FlexDevice).input;
        inner.forward(&input)
    };
    let diff = (logits(packed) - logits(padded)).abs().max().into_scalar();
    assert!(
        diff <= 1e-5 * logit_scale.max(1.0),
        "inference logits differ by {diff}"
    );
}
