#!/usr/bin/env bash
# Driftwood's CPU backend against llama.cpp, side by side on this machine.
#
# Installs node-llama-cpp@3.21.1 (llama.cpp's prebuilt CPU binaries) with
# npm into a work folder, writes a Llama-3.2-1B-shaped model with random
# weights twice (MLX q4 safetensors for Driftwood, GGUF Q4_0 for
# llama.cpp), then times both engines alternately with the same thread
# count and prints prefill and decode tok/s, the medians, and the
# Driftwood/llama.cpp ratios. Not part of the tests.
#
#   bench/vs-llamacpp.sh                 # 2 threads, 128-token prompt, 32 decoded, 3 runs
#   THREADS=4 RUNS=5 bench/vs-llamacpp.sh
#
# WORK (default: a new temporary folder) keeps npm's install and the
# models; point it at an earlier run's folder to skip those steps.
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-2}
PROMPT=${PROMPT:-128}
GEN=${GEN:-32}
RUNS=${RUNS:-3}
WORK=${WORK:-$(mktemp -d -t driftwood-vs-llamacpp.XXXXXX)}
NLC_VERSION=3.21.1
echo "work folder: $WORK" >&2

if [ ! -d "$WORK/npm/node_modules/node-llama-cpp" ]; then
	echo "installing node-llama-cpp@$NLC_VERSION ..." >&2
	mkdir -p "$WORK/npm"
	(cd "$WORK/npm" && npm init -y >/dev/null &&
		npm install --no-audit --no-fund --omit=optional \
			"node-llama-cpp@$NLC_VERSION" "@node-llama-cpp/linux-x64@$NLC_VERSION" >&2)
fi
cp bench/llamacpp.mjs "$WORK/npm/"

go build -o "$WORK/driftwood" ./cmd/driftwood
if [ ! -f "$WORK/1b-q4/model.safetensors" ]; then
	"$WORK/driftwood" dev gen-model --shape llama-3.2-1b --dtype q4 --out "$WORK/1b-q4" >&2
fi
if [ ! -f "$WORK/1b-q4_0.gguf" ]; then
	echo "writing $WORK/1b-q4_0.gguf ..." >&2
	go run ./bench/ggufgen --from "$WORK/1b-q4" --out "$WORK/1b-q4_0.gguf"
fi

# Both models in the page cache first, so that no run reads the disk.
cat "$WORK/1b-q4/model.safetensors" "$WORK/1b-q4_0.gguf" >/dev/null

# One line of JSON per run and engine, alternating.
results="$WORK/results.jsonl"
: >"$results"
for run in $(seq "$RUNS"); do
	echo "run $run/$RUNS ..." >&2
	"$WORK/driftwood" bench --model "$WORK/1b-q4" --threads "$THREADS" \
		--prompt-tokens "$PROMPT" --gen-tokens "$GEN" --runs 1 --json 2>/dev/null |
		jq -c '{engine: "driftwood", prefill: .prefill_tok_per_s, decode: .decode_tok_per_s, rss: .peak_rss_mib}' >>"$results"
	node "$WORK/npm/llamacpp.mjs" "$WORK/1b-q4_0.gguf" "$PROMPT" "$GEN" "$THREADS" |
		jq -c '{engine: "llama.cpp", prefill: .prefill_tok_per_s, decode: .decode_tok_per_s}' >>"$results"
done

# Time to first token after start: load, tokenise, prefill a short chat
# prompt, sample one token.
start=$(date +%s.%N)
"$WORK/driftwood" run --model "$WORK/1b-q4" --threads "$THREADS" --chat \
	--prompt "Write a haiku about driftwood." --max-tokens 1 >/dev/null 2>&1
ttft=$(echo "$(date +%s.%N) - $start" | bc)

jq -rs --arg threads "$THREADS" --arg prompt "$PROMPT" --arg gen "$GEN" --arg ttft "$ttft" '
	def median: sort | .[length/2|floor];
	def fmt: . * 10 | round / 10 | tostring;
	(map(select(.engine == "driftwood"))) as $d |
	(map(select(.engine == "llama.cpp"))) as $l |
	($d | map(.prefill) | median) as $dp | ($d | map(.decode) | median) as $dd |
	($l | map(.prefill) | median) as $lp | ($l | map(.decode) | median) as $ld |
	"Llama-3.2-1B shape, random weights, \($threads) threads, prompt \($prompt), decode \($gen), median of \($d | length) alternating runs",
	"",
	"               prefill tok/s   decode tok/s",
	"driftwood q4   \($dp | fmt | .[0:12] | . + (" " * (16 - length)))\($dd | fmt)",
	"llama.cpp Q4_0 \($lp | fmt | .[0:12] | . + (" " * (16 - length)))\($ld | fmt)",
	"ratio          \($dp / $lp * 100 | round / 100 | tostring | . + (" " * (16 - length)))\($dd / $ld * 100 | round / 100)",
	"",
	"runs (prefill/decode): driftwood \($d | map("\(.prefill | fmt)/\(.decode | fmt)") | join(", ")); llama.cpp \($l | map("\(.prefill | fmt)/\(.decode | fmt)") | join(", "))",
	"driftwood peak RSS \($d | map(.rss) | max | round) MiB; time to first token after start \($ttft | tonumber * 100 | round / 100) s"
' "$results"
