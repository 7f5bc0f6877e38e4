#!/usr/bin/env python3
"""Record a PyTorch reference fixture for the BERT (all-MiniLM-L6-v2) parity test.

What it records
---------------
The sentence-transformers checkpoint all-MiniLM-L6-v2 is a plain Hugging Face
``BertModel`` (6 layers, hidden 384, 12 heads, FFN 1536, GELU, absolute
position embeddings). Its weight names have no ``bert.`` prefix. This script runs
that checkpoint with PyTorch + transformers on a fixed batch of sentences of
clearly different lengths, and writes a small safetensors file holding:

* ``input_ids``         int64   [n, s]       token ids, right-padded with [PAD] (id 0)
                                             to the longest sentence of the batch
* ``attention_mask``    int64   [n, s]       1 = real token, 0 = padding
* ``token_type_ids``    int64   [n, s]       all zeros (single-segment input)
* ``last_hidden_state`` float32 [n, s, 384]  encoder output; rows at padded
                                             positions are computed but meaningless,
                                             compare real tokens only
* ``pooler_output``     float32 [n, 384]     tanh(dense(hidden[:, 0])), written only
                                             when the checkpoint has pooler weights

and string metadata: ``sentences`` (a JSON list, in batch order),
``transformers_version``, ``torch_version``, ``model_sha256``,
``tokenizer_sha256``, ``has_pooler``, ``attn_implementation`` and
``description``.

The model runs in float32, eval mode (no dropout), on the CPU, with eager
attention and the attention mask applied. Before writing, the script checks
that every tensor of ``model.safetensors`` was loaded into the model (no
missing, unexpected or mismatched keys, and each loaded value equal to the
file's), and that running each sentence alone, without padding, gives the same
``last_hidden_state`` on its real tokens as the padded batch (within 1e-5), so
the fixture can also back a padding-independence test.

Requirements
------------
    pip install torch transformers safetensors

These are large (the PyPI torch wheel pulls in CUDA libraries, several GB).
This script is never run in CI; the fixture it writes is committed at
``models/tests/fixtures/minilm_l6_hidden.safetensors`` and the Rust tests read only that.

Usage
-----
    python3 scripts/record_minilm_fixture.py MODEL_DIR OUT_FILE

MODEL_DIR is the extracted ``model/`` folder of the checkpoint (config.json,
model.safetensors, tokenizer.json, vocab.txt), e.g.
``~/.cache/burnacc/text/all-minilm-l6-v2``, which ``scripts/fetch_text_data.sh``
fills. Example:

    python3 scripts/record_minilm_fixture.py \\
        ~/.cache/burnacc/text/all-minilm-l6-v2 \\
        models/tests/fixtures/minilm_l6_hidden.safetensors
"""

import hashlib
import json
import os
import sys

# Pinned hashes of the checkpoint files this fixture is recorded from.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

# Fixed inputs, of clearly different lengths. Order matters: it is the batch order.
SENTENCES = [
    "hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "A gripping, beautifully acted film that never lets go of you.",
    "burnacc trains BERT in Rust.",
    "Although the training run was interrupted twice by a power outage, the team "
    "restored the latest checkpoint and still finished the experiment before Friday.",
]

# Expected ids of "hello, world!" ([CLS] hello , world ! [SEP]).
HELLO_WORLD_IDS = [101, 7592, 1010, 2088, 999, 102]

PADDING_TOLERANCE = 1e-5


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_sha256(path, expected):
    if not os.path.isfile(path):
        fail(f"{path}: file not found")
    got = sha256_of(path)
    if got != expected:
        fail(f"{path}: sha256 mismatch\n  expected {expected}\n  got      {got}")
    print(f"sha256 ok: {os.path.basename(path)} {got}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        print("usage: python3 scripts/record_minilm_fixture.py MODEL_DIR OUT_FILE", file=sys.stderr)
        sys.exit(2)
    model_dir = os.path.expanduser(sys.argv[1])
    out_file = sys.argv[2]

    model_path = os.path.join(model_dir, "model.safetensors")
    tokenizer_path = os.path.join(model_dir, "tokenizer.json")
    verify_sha256(model_path, MODEL_SHA256)
    verify_sha256(tokenizer_path, TOKENIZER_SHA256)

    # Heavy imports only after the cheap checks.
    import torch
    import transformers
    from safetensors import safe_open
    from safetensors.torch import save_file
    from transformers import BertModel, PreTrainedTokenizerFast

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    torch.set_grad_enabled(False)

    # ---- model -------------------------------------------------------------
    # The checkpoint is stored in float32; .float() pins it whatever the default
    # load dtype of the installed transformers is.
    model, info = BertModel.from_pretrained(
        model_dir, attn_implementation="eager", output_loading_info=True,
    )
    model = model.float().eval()
    if any(p.dtype != torch.float32 for p in model.parameters()):
        fail("model parameters are not all float32")
    print("loading info:")
    for k in sorted(info):
        print(f"  {k}: {info[k]}")
    for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        if info.get(k):
            fail(f"{model_path}: {k} while loading: {info[k]}")

    # Independent check: every tensor in the file ends up, unchanged, in the model.
    state = model.state_dict()
    buffers = dict(model.named_buffers())
    with safe_open(model_path, framework="pt") as f:
        file_keys = sorted(f.keys())
        for key in file_keys:
            t = f.get_tensor(key)
            if key in state:
                target = state[key]
            elif key in buffers:
                target = buffers[key]
            elif key == "embeddings.position_ids":
                # Non-persistent buffer in recent transformers; harmless only if it is
                # exactly arange(max_position_embeddings).
                expected = torch.arange(model.config.max_position_embeddings).unsqueeze(0)
                if not torch.equal(t, expected):
                    fail(f"{model_path}: {key} is not arange({model.config.max_position_embeddings})")
                continue
            else:
                fail(f"{model_path}: key {key} was not used by BertModel")
            if tuple(t.shape) != tuple(target.shape) or not torch.equal(t.to(target.dtype), target):
                fail(f"{model_path}: {key} differs from the loaded model parameter")
    unused_params = sorted(set(state) - set(file_keys))
    if unused_params:
        fail(f"{model_path}: model parameters not in the file: {unused_params}")
    has_pooler = any(k.startswith("pooler.") for k in file_keys)
    print(f"all {len(file_keys)} tensors of model.safetensors used; pooler weights: {has_pooler}")
    if not has_pooler:
        # Rebuild without the (randomly initialised) pooler so nothing is invented.
        model = BertModel.from_pretrained(
            model_dir, attn_implementation="eager", add_pooling_layer=False,
        ).float().eval()

    # ---- tokenizer ---------------------------------------------------------
    tok = PreTrainedTokenizerFast(
        tokenizer_file=tokenizer_path,
        unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
        cls_token="[CLS]", mask_token="[MASK]",
    )
    # tokenizer.json ships fixed padding to 128 and truncation at 128: switch both
    # off and apply padding explicitly below.
    tok.backend_tokenizer.no_padding()
    tok.backend_tokenizer.no_truncation()

    enc = dict(truncation=False, return_tensors="pt",
               return_attention_mask=True, return_token_type_ids=True)
    singles = [tok(s, padding=False, **enc) for s in SENTENCES]
    batch = tok(SENTENCES, padding="longest", **enc)
    input_ids = batch["input_ids"].to(torch.int64)
    attention_mask = batch["attention_mask"].to(torch.int64)
    token_type_ids = batch["token_type_ids"].to(torch.int64)
    lengths = [int(x["input_ids"].shape[1]) for x in singles]
    if input_ids.shape[1] != max(lengths):
        fail(f"batch padded to {input_ids.shape[1]}, expected longest length {max(lengths)}")
    if attention_mask.sum(dim=1).tolist() != lengths:
        fail("attention mask does not match the per-sentence lengths")
    if (token_type_ids != 0).any():
        fail("token_type_ids not all zero for single-segment input")
    if (input_ids[attention_mask == 0] != tok.pad_token_id).any():
        fail("padding positions do not hold the [PAD] id")

    print("tokens:")
    for s, x in zip(SENTENCES, singles):
        ids = x["input_ids"][0].tolist()
        print(f"  [{len(ids):2d}] {s!r}")
        print(f"       ids    {ids}")
        print(f"       pieces {tok.convert_ids_to_tokens(ids)}")
    hello_ids = singles[0]["input_ids"][0].tolist()
    print(f'ids of "hello, world!": {hello_ids}')
    if hello_ids != HELLO_WORLD_IDS:
        fail(f'"hello, world!" tokenised to {hello_ids}, expected {HELLO_WORLD_IDS}')

    # ---- forward -----------------------------------------------------------
    out = model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
    hidden = out.last_hidden_state.to(torch.float32).contiguous()
    n, s = input_ids.shape
    assert hidden.shape == (n, s, model.config.hidden_size), hidden.shape

    # Padding independence: each sentence alone must match the batch on its real tokens.
    worst = 0.0
    for i, x in enumerate(singles):
        alone = model(
            input_ids=x["input_ids"], attention_mask=x["attention_mask"],
            token_type_ids=x["token_type_ids"],
        )
        L = lengths[i]
        d = (alone.last_hidden_state[0] - hidden[i, :L]).abs().max().item()
        if has_pooler:
            d = max(d, (alone.pooler_output[0] - out.pooler_output[i]).abs().max().item())
        print(f"  sentence {i}: max |alone - batched| on real tokens = {d:.3e}")
        worst = max(worst, d)
    print(f"padding independence: max difference {worst:.3e} (tolerance {PADDING_TOLERANCE:g})")
    if worst > PADDING_TOLERANCE:
        fail(f"padded batch differs from unpadded runs by {worst:.3e} > {PADDING_TOLERANCE:g}")

    real = attention_mask.bool()
    print(f"max |last_hidden_state| (all positions): {hidden.abs().max().item():.6f}")
    print(f"max |last_hidden_state| (real tokens):   {hidden[real].abs().max().item():.6f}")

    # ---- write -------------------------------------------------------------
    tensors = {
        "input_ids": input_ids.contiguous(),
        "attention_mask": attention_mask.contiguous(),
        "token_type_ids": token_type_ids.contiguous(),
        "last_hidden_state": hidden,
    }
    if has_pooler:
        tensors["pooler_output"] = out.pooler_output.to(torch.float32).contiguous()
    metadata = {
        "sentences": json.dumps(SENTENCES),
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "model_sha256": MODEL_SHA256,
        "tokenizer_sha256": TOKENIZER_SHA256,
        "has_pooler": "true" if has_pooler else "false",
        "attn_implementation": "eager",
        "description": (
            "sentence-transformers/all-MiniLM-L6-v2 (HF BertModel, 6 layers, hidden 384, "
            "12 heads, ffn 1536) run with PyTorch in float32 eval mode on CPU. "
            "Sentences tokenised with tokenizer.json (BERT uncased WordPiece, [CLS] ... [SEP]), "
            "right-padded with [PAD]=0 to the longest sentence; token_type_ids all 0. "
            "last_hidden_state is the raw encoder output (no mean pooling, no normalisation); "
            "rows at padded positions (attention_mask 0) are not meaningful. "
            + ("pooler_output = tanh(pooler.dense(last_hidden_state[:, 0])). " if has_pooler
               else "The checkpoint has no pooler weights, so pooler_output is omitted. ")
            + "Each sentence run alone without padding matches its batched rows within 1e-5."
        ),
    }
    out_dir = os.path.dirname(out_file)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    save_file(tensors, out_file, metadata=metadata)
    print(f"wrote {out_file} ({os.path.getsize(out_file)} bytes)")
    for k, v in tensors.items():
        print(f"  {k}: {str(v.dtype).replace('torch.', '')} {list(v.shape)}")


if __name__ == "__main__":
    main()
