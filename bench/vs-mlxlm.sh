#!/usr/bin/env bash
# Driftwood's MLX backend against mlx-lm, the tool MacBook users run, on
# one MLX model folder and the same MLX library.
#
# Needs a Python with mlx and mlx-lm (pip install mlx mlx-lm; on Linux
# also mlx-cpu) as PYTHON, and libmlxc built against that same MLX where
# Driftwood finds it (DRIFTWOOD_MLXC, or the usual places: see
# `driftwood doctor`). Not part of the tests.
#
# 1. Greedy ids: ten chat prompts, rendered by the model's own chat
#    template through mlx-lm's tokenizer, GEN tokens each from
#    mlx_lm.generate_step (temperature 0) and from
#    `driftwood run --backend mlx --prompt-ids ... --temp 0 --ignore-eos`;
#    prints how many agree and where the others part.
# 2. Speed: RUNS times, alternating, mlx_lm.benchmark and
#    `driftwood bench --backend mlx`, PROMPT_TOKENS of prefill and
#    GEN_TOKENS of decode; prints each run and the medians.
#
#   PYTHON=~/venv/bin/python MODEL=path/to/mlx-folder bench/vs-mlxlm.sh
#   GEN=16 RUNS=5 PROMPT_TOKENS=512 ... bench/vs-mlxlm.sh
#
# A GGUF file is first turned into an MLX folder with
# `driftwood dev gguf-to-mlx`, which mlx-lm loads.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${PYTHON:?set PYTHON to a python with mlx and mlx-lm installed}"
: "${MODEL:?set MODEL to an MLX model folder}"
GEN=${GEN:-32}
RUNS=${RUNS:-3}
PROMPT_TOKENS=${PROMPT_TOKENS:-128}
GEN_TOKENS=${GEN_TOKENS:-64}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

go build -o "$WORK/driftwood" ./cmd/driftwood
dw() { "$WORK/driftwood" "$@"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //' || sysctl -n machdep.cpu.brand_string)"
"$PYTHON" -c 'import mlx.core as mx, importlib.metadata as m; print("mlx", mx.__version__, "· mlx-lm", m.version("mlx-lm"), "· device", mx.default_device())'
dw doctor 2>&1 | grep -E '^(libmlxc|MLX|GPU)' || true

cat > "$WORK/greedy.py" <<'EOF'
import sys
import mlx.core as mx
from mlx_lm import load
from mlx_lm.generate import generate_step
from mlx_lm.sample_utils import make_sampler

model, tok = load(sys.argv[1])
n = int(sys.argv[2])
questions = [
    "What is the capital of France?",
    "Name three rivers in Africa.",
    "Write a haiku about driftwood.",
    "Explain what a hash table is in two sentences.",
    "How many legs does a spider have?",
    "Give me a recipe for pancakes.",
    "What is 17 times 23?",
    "Translate 'good morning' into Spanish.",
    "Why is the sky blue?",
    "Suggest a name for a cat.",
]
with open(sys.argv[3], "w") as prompts, open(sys.argv[4], "w") as out:
    for q in questions:
        ids = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True)
        got = [int(t) for t, _ in generate_step(mx.array(ids), model, max_tokens=n, sampler=make_sampler(0.0))]
        prompts.write(",".join(map(str, ids)) + "\n")
        out.write(",".join(map(str, got)) + "\n")
EOF
"$PYTHON" "$WORK/greedy.py" "$MODEL" "$GEN" "$WORK/prompts.txt" "$WORK/mlxlm.txt"
while read -r ids; do
	dw run --backend mlx --model "$MODEL" --prompt-ids "$ids" --temp 0 --max-tokens "$GEN" --ignore-eos --json 2>/dev/null |
		sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | paste -sd, -
done < "$WORK/prompts.txt" > "$WORK/driftwood.txt"
paste -d' ' "$WORK/mlxlm.txt" "$WORK/driftwood.txt" | awk -v gen="$GEN" '
	{ n++; if ($1 == $2) { same++; next }
	  split($1, a, ","); split($2, b, ","); k = 1; while (a[k] == b[k]) k++
	  printf "prompt %d: mlx-lm and Driftwood part at token %d (%s vs %s)\n", n, k, a[k], b[k] }
	END { printf "greedy ids: %d of %d prompts the same for %d tokens\n", same, n, gen }'

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
: > "$WORK/m.pp"; : > "$WORK/m.tg"; : > "$WORK/d.pp"; : > "$WORK/d.tg"
for i in $(seq "$RUNS"); do
	m=$("$PYTHON" -m mlx_lm.benchmark --model "$MODEL" -p "$PROMPT_TOKENS" -g "$GEN_TOKENS" -n 1 2>&1 | grep '^Averages')
	pp=$(sed 's/.*prompt_tps=\([0-9.]*\).*/\1/' <<< "$m"); tg=$(sed 's/.*generation_tps=\([0-9.]*\).*/\1/' <<< "$m")
	echo "$pp" >> "$WORK/m.pp"; echo "$tg" >> "$WORK/m.tg"
	d=$(dw bench --backend mlx --model "$MODEL" --prompt-tokens "$PROMPT_TOKENS" --gen-tokens "$GEN_TOKENS" --runs 1 --json 2>/dev/null)
	dpp=$(sed 's/.*"prefill_tok_per_s":\([0-9.]*\).*/\1/' <<< "$d"); dtg=$(sed 's/.*"decode_tok_per_s":\([0-9.]*\).*/\1/' <<< "$d")
	echo "$dpp" >> "$WORK/d.pp"; echo "$dtg" >> "$WORK/d.tg"
	echo "run $i: mlx-lm prefill $pp decode $tg tok/s · Driftwood prefill $dpp decode $dtg tok/s"
done
mpp=$(median < "$WORK/m.pp"); mtg=$(median < "$WORK/m.tg"); dpp=$(median < "$WORK/d.pp"); dtg=$(median < "$WORK/d.tg")
awk -v a="$dpp" -v b="$mpp" -v c="$dtg" -v d="$mtg" -v p="$PROMPT_TOKENS" -v g="$GEN_TOKENS" 'BEGIN {
	printf "medians: prefill %d: Driftwood %.1f / mlx-lm %.1f tok/s (%.2fx); decode %d: %.1f / %.1f tok/s (%.2fx)\n", p, a, b, a / b, g, c, d, c / d }'
