# Writes the prompt caches mlxlm-*.safetensors with mlx-lm's own
# save_prompt_cache, for TestMLXLMFixtures. Run from the repository root:
#
#   python sessions/testdata/mlxlm_fixtures.py new   # mlx-lm 0.32.2
#   PYTHONPATH=<mlx-lm 0.32.0's source> python sessions/testdata/mlxlm_fixtures.py old
#
# The caches grow 16 positions at a time instead of 256 so that the
# files stay small while the newer layout still holds unused positions.
import sys

import mlx.core as mx
from mlx_lm import load
from mlx_lm.models import cache as C

# "The tide is out" with the tiny models' tokenizer (BOS first).
IDS = [500, 367, 256, 305, 68, 286, 220, 264, 83]


def make(model_dir, quant, out):
    model, _ = load(model_dir)
    C.KVCache.step = C.QuantizedKVCache.step = 16
    if quant:
        cache = [C.QuantizedKVCache(group_size=32, bits=quant) for _ in model.layers]
    else:
        cache = [C.KVCache() for _ in model.layers]
    model(mx.array([IDS]), cache=cache)
    mx.eval([c.state for c in cache])
    C.save_prompt_cache(out, cache, {"model": model_dir, "tokenizer_config": "{}"})


which = sys.argv[1]
d = "sessions/testdata/"
if which == "new":
    make("testdata/models/tiny-f16", 0, d + "mlxlm-new-f16.safetensors")
    make("testdata/models/tiny-hd32-f32", 8, d + "mlxlm-new-q8.safetensors")
    make("testdata/models/tiny-hd32-f32", 4, d + "mlxlm-new-q4.safetensors")
else:
    make("testdata/models/tiny-f32", 0, d + "mlxlm-old-f32.safetensors")
    make("testdata/models/tiny-hd32-f32", 8, d + "mlxlm-old-q8.safetensors")
