"""Writes vectors.json.gz: test vectors for engine/gguf's Quantize and
Dequantize, made by gguf-py (llama.cpp's Python package), a reference
independent of the Go code.

Not run by the tests: they read the committed vectors.json.gz, so that a
fresh clone needs nothing from PyPI. To make it again:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf numpy
    /tmp/venv/bin/python make_vectors.py   # in this folder

The vectors are fixed by the seed; a new gguf-py gives the same file
unless it changed the formats (which would be news).

Two kinds of entry, each {"type", "kind", "blocks", "values"[, "input"]}:
base64 of little-endian bytes; blocks in ggml's layout, values and input
float32.

- "random": blocks of random bytes, with each f16 scale set to a finite
  value (normal, subnormal, zero, negative), dequantized. They reach every
  code and scale pattern, including ones no quantizer writes.
- "quantized": float32 input quantized by gguf-py (for the types it
  quantizes: F16, BF16, Q4_0, Q4_1, Q8_0, which match ggml's
  quantize_row_*_ref), then dequantized.
"""

import base64
import gzip
import importlib.metadata
import json

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

rng = np.random.default_rng(20240923)

# Byte offsets of the f16 scales in each block type.
SCALES = {
    T.Q4_0: [0],
    T.Q4_1: [0, 2],
    T.Q8_0: [0],
    T.Q4_K: [0, 2],
    T.Q5_K: [0, 2],
    T.Q6_K: [208],
}


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def scale_values(n):
    """n finite f16 scales: mostly normal, some subnormal, zero, negative."""
    v = (rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 1, n)).astype(np.float16)
    specials = np.array([0.0, -0.0, 6e-8, -3e-6, 65504.0, 1.0], dtype=np.float16)
    v[: len(specials)] = specials[: min(len(specials), n)]
    return v


def random_blocks(t, n):
    _, size = GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    for off in SCALES.get(t, []):
        blocks[:, off : off + 2] = scale_values(n).view(np.uint8).reshape(n, 2)
    return blocks


def quant_input(t, n_blocks):
    """Weights to quantize: Gaussian blocks of varied scale, and blocks
    that test the edges (zeros, a constant, one outlier of either sign,
    all negative, values on the rounding ties)."""
    bs, _ = GGML_QUANT_SIZES[t]
    x = rng.standard_normal((n_blocks, bs)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-3, 2, (n_blocks, 1))).astype(np.float32)
    x[0] = 0
    x[1] = 0.25
    x[2, :] = 0.01
    x[2, 5] = -3.0
    x[3, :] = -np.abs(x[3])
    x[4] = np.arange(bs, dtype=np.float32) / 2 - bs / 4
    x[5, :] = 0.01
    x[5, 7] = 3.0
    return x


def dequant(t, blocks):
    return gguf.quants.dequantize(blocks, t).astype(np.float32)


entries = []
for t, n in [(T.F16, 512), (T.BF16, 512), (T.Q4_0, 32), (T.Q4_1, 32), (T.Q8_0, 32), (T.Q4_K, 8), (T.Q5_K, 8), (T.Q6_K, 8)]:
    blocks = random_blocks(t, n)
    entries.append({"type": t.name, "kind": "random", "blocks": b64(blocks), "values": b64(dequant(t, blocks))})

# F16 and BF16 inputs take in the specials: infinities, NaN (BF16 only:
# numpy keeps a NaN's payload where ggml writes its quiet NaN), subnormals,
# values that overflow and values halfway between two neighbours.
specials = np.array([np.inf, -np.inf, 1e-8, -1e-8, 7e4, -7e4, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8], dtype=np.float32)
for t in [T.F16, T.BF16]:
    x = np.concatenate([specials, (rng.standard_normal(502) * 10.0 ** rng.uniform(-9, 5, 502)).astype(np.float32)])
    if t == T.BF16:
        x = np.concatenate([x, np.array([np.nan], dtype=np.float32)])
    with np.errstate(over="ignore"):  # ±7e4 overflows f16, as meant
        blocks = gguf.quants.quantize(x, t).view(np.uint8)
    entries.append({"type": t.name, "kind": "quantized", "input": b64(x), "blocks": b64(blocks), "values": b64(dequant(t, blocks))})

for t in [T.Q4_0, T.Q4_1, T.Q8_0]:
    x = quant_input(t, 32)
    blocks = gguf.quants.quantize(x.reshape(-1), t)
    entries.append({"type": t.name, "kind": "quantized", "input": b64(x), "blocks": b64(blocks), "values": b64(dequant(t, blocks))})

version = importlib.metadata.version("gguf")
doc = {"generator": f"make_vectors.py with gguf-py {version}, numpy {np.__version__}", "entries": entries}
with gzip.GzipFile("vectors.json.gz", "wb", mtime=0) as f:
    f.write(json.dumps(doc, indent=1).encode())
