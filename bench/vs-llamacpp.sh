#!/usr/bin/env bash
# Driftwood's CPU backend against llama.cpp, side by side on this machine.
#
# llama.cpp is timed through its C API by bench/llamacpp_bench.c, which this
# script compiles (gcc) against the prebuilt libllama/libggml shared
# libraries of the npm package @node-llama-cpp/linux-x64@3.21.1, with the
# headers of the llama.cpp source those were built from (the git bundle in
# node-llama-cpp's package). npm installs both into the work folder; nothing
# of llama.cpp is built from source.
#
# For each weight type it writes a Llama-3.2-1B-shaped model with random
# weights (`driftwood dev gen-model`, MLX safetensors) and converts the same
# weights to GGUF (bench/ggufgen): q4 -> Q4_0, q8 -> Q8_0, f16 -> F16;
# Driftwood runs the MLX folder, llama.cpp the GGUF file. The GGUF types
# Q8_0 and Q4_K_M run the same GGUF file in both engines: Q8_0 is q8's,
# Q4_K_M is made from the F16 file by llama.cpp's own quantiser
# (bench/llamacpp_quantize.c, llama_model_quantize). Then,
# RUNS times, for each (type, prompt, threads) it runs one process of each
# engine, alternating which goes first, and prints the medians and the
# ratios driftwood/llama.cpp. Each process: load, prefill of PROMPT random
# tokens, then GEN single-token decode steps (llama.cpp as llama-bench
# does: one warm-up, one llama_decode for the prompt, GEN of one token).
# With LOADED=1 every (type, prompt, threads) also runs under load: a busy
# loop pinned to the last CPU for the whole of both engines' runs (a
# laptop's other work), the rows marked "+busy". Then the machine's
# streaming read bandwidth (bench/readbw.c, 1 GiB, each thread count) and
# the share of it each engine's decode reaches (weights bytes per token ×
# tokens/s), and the cores' int8 multiply-add peak (bench/int8peak.c:
# VNNI, and AMX tiles where the CPU has them) with the share of it each
# engine's prefill reaches (the matmuls' multiply-adds per token, from the
# model's config.json, × tokens/s; attention's are left out). Last, the time to first token after start of `driftwood run
# --chat` for a short chat prompt, median of RUNS. Not part of the tests.
#
#   bench/vs-llamacpp.sh                        # the full matrix, 5 runs
#   TYPES=q4 PROMPTS=512 THREADS_LIST=2 RUNS=3 bench/vs-llamacpp.sh
#   TYPES="Q4_K_M Q8_0" bench/vs-llamacpp.sh   # the same GGUF files
#   DRIFTWOOD_ENV=DRIFTWOOD_KERNELS=float bench/vs-llamacpp.sh
#   LOADED=1 TYPES=Q4_K_M PROMPTS=128 bench/vs-llamacpp.sh
#   TYPES=Q4_K_M PROMPTS="16 1024 4096" GEN=32 FLASH=on bench/vs-llamacpp.sh
#
# The decode columns are speeds after PROMPT tokens of context: a list of
# depths in PROMPTS is llama-bench's -d (their prefill columns are the
# long prompts' prefill). llama.cpp keeps an f16 KV cache and takes
# prompts over 512 tokens in ubatches of 512 (its default); FLASH (auto,
# llama.cpp's default; on; off) is its flash attention, KV_TYPE (f16)
# Driftwood's cache type (--kv-type).
#
# TYPES (q4 q8 f16; or Q8_0 Q4_K_M), PROMPTS (128 512), GEN (64), THREADS_LIST (1 2) and
# RUNS (5) narrow or widen the matrix. DRIFTWOOD_ENV is a space-separated
# list of VAR=value given to Driftwood's processes only. WORK (default: a
# new temporary folder) keeps npm's install, the llama.cpp headers, the
# models and the results; point it at an earlier run's folder to skip
# those steps.
set -euo pipefail
cd "$(dirname "$0")/.."

TYPES=${TYPES:-q4 q8 f16}
PROMPTS=${PROMPTS:-128 512}
GEN=${GEN:-64}
THREADS_LIST=${THREADS_LIST:-1 2}
RUNS=${RUNS:-5}
DRIFTWOOD_ENV=${DRIFTWOOD_ENV:-}
LOADED=${LOADED:-0}
FLASH=${FLASH:-auto}
KV_TYPE=${KV_TYPE:-f16}
WORK=${WORK:-$(mktemp -d -t driftwood-vs-llamacpp.XXXXXX)}
NLC_VERSION=3.21.1
CHAT_PROMPT="Write a haiku about driftwood."
echo "work folder: $WORK" >&2
for c in go gcc git npm jq bc column taskset; do
	if ! command -v "$c" >/dev/null; then
		echo "$c is needed and not on PATH" >&2
		exit 1
	fi
done

read -r -a types <<<"$TYPES"
read -r -a prompts <<<"$PROMPTS"
read -r -a threads_list <<<"$THREADS_LIST"
read -r -a dw_env <<<"$DRIFTWOOD_ENV"
for t in "${types[@]}"; do
	case $t in
	q4 | q8 | f16 | Q8_0 | Q4_K_M) ;;
	*)
		echo "TYPES: $t is not one of q4 q8 f16 Q8_0 Q4_K_M" >&2
		exit 2
		;;
	esac
done
if [ "${#types[@]}" -eq 0 ] || [ "${#prompts[@]}" -eq 0 ] || [ "${#threads_list[@]}" -eq 0 ] || [ "$RUNS" -lt 1 ]; then
	echo "TYPES, PROMPTS and THREADS_LIST must not be empty, RUNS at least 1" >&2
	exit 2
fi

# gguf_type names the GGUF weight type that stands for a Driftwood dtype.
gguf_type() {
	case $1 in
	q4) echo Q4_0 ;;
	q8) echo Q8_0 ;;
	f16) echo F16 ;;
	*) echo "$1" ;;
	esac
}

# mlx_type is the MLX folder a GGUF type is made from (f16 for Q4_K_M,
# which llama.cpp quantises from the F16 file), or the type itself.
mlx_type() {
	case $1 in
	Q8_0) echo q8 ;;
	Q4_K_M) echo f16 ;;
	*) echo "$1" ;;
	esac
}

# dw_model is what Driftwood runs for a type: the MLX folder, or for a
# GGUF type the same file as llama.cpp.
dw_model() {
	case $1 in
	q4 | q8 | f16) echo "$WORK/1b-$1" ;;
	*) echo "$WORK/1b-$1.gguf" ;;
	esac
}

# driftwood runs the Driftwood binary with DRIFTWOOD_ENV added.
driftwood() {
	env ${dw_env[@]+"${dw_env[@]}"} "$WORK/driftwood" "$@"
}

# llama.cpp's prebuilt libraries and its headers.
if [ ! -d "$WORK/npm/node_modules/@node-llama-cpp/linux-x64" ]; then
	echo "installing node-llama-cpp@$NLC_VERSION ..." >&2
	mkdir -p "$WORK/npm"
	(cd "$WORK/npm" && npm init -y >/dev/null &&
		npm install --no-audit --no-fund --omit=optional --ignore-scripts \
			"node-llama-cpp@$NLC_VERSION" "@node-llama-cpp/linux-x64@$NLC_VERSION" >&2)
fi
libllama=$(find "$WORK/npm/node_modules/@node-llama-cpp/linux-x64/bins" -name 'libllama.*so' -print -quit)
if [ -z "$libllama" ]; then
	echo "no libllama.so under $WORK/npm/node_modules/@node-llama-cpp/linux-x64/bins" >&2
	exit 1
fi
bins=$(dirname "$libllama")
libggml=$(find "$bins" -maxdepth 1 -name 'libggml.*so' -print -quit)
if [ ! -f "$WORK/llama.cpp/include/llama.h" ]; then
	echo "unpacking llama.cpp's headers from node-llama-cpp's source bundle ..." >&2
	rm -rf "$WORK/llama.cpp"
	git clone -q "$WORK/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$WORK/llama.cpp" 2>/dev/null
fi
gcc -O2 -std=gnu11 -Wall -Wextra -o "$WORK/llamacpp_bench" bench/llamacpp_bench.c \
	-I"$WORK/llama.cpp/include" -I"$WORK/llama.cpp/ggml/include" \
	-L"$bins" -l:"$(basename "$libllama")" -l:"$(basename "$libggml")" -l:libggml-base.so \
	-Wl,-rpath,"$bins"
gcc -O2 -std=gnu11 -Wall -Wextra -o "$WORK/llamacpp_quantize" bench/llamacpp_quantize.c \
	-I"$WORK/llama.cpp/include" -I"$WORK/llama.cpp/ggml/include" \
	-L"$bins" -l:"$(basename "$libllama")" -l:"$(basename "$libggml")" -l:libggml-base.so \
	-Wl,-rpath,"$bins"

gcc -O2 -march=native -std=gnu11 -Wall -Wextra -pthread -o "$WORK/readbw" bench/readbw.c
# The int8 probe needs AVX2 or later; without it the peak lines are left out.
rm -f "$WORK/int8peak"
if ! gcc -O2 -march=native -std=gnu11 -Wall -Wextra -pthread -o "$WORK/int8peak" bench/int8peak.c 2>"$WORK/int8peak.log"; then
	echo "bench/int8peak.c does not build for this CPU (see $WORK/int8peak.log): no int8 peak" >&2
fi

# The models, each in two formats with the same weights.
go build -o "$WORK/driftwood" ./cmd/driftwood
for t in "${types[@]}"; do
	m=$(mlx_type "$t")
	if [ ! -f "$WORK/1b-$m/model.safetensors" ]; then
		"$WORK/driftwood" dev gen-model --shape llama-3.2-1b --dtype "$m" --out "$WORK/1b-$m" >&2
	fi
	from="$WORK/1b-$(gguf_type "$m").gguf"
	if [ ! -f "$from" ]; then
		echo "writing $from ..." >&2
		go run ./bench/ggufgen --from "$WORK/1b-$m" --out "$from.tmp"
		mv "$from.tmp" "$from"
	fi
	gguf="$WORK/1b-$(gguf_type "$t").gguf"
	if [ ! -f "$gguf" ]; then
		echo "quantising $gguf with llama.cpp ..." >&2
		"$WORK/llamacpp_quantize" "$from" "$gguf.tmp" "$t" 2>>"$WORK/quantize.log"
		mv "$gguf.tmp" "$gguf"
	fi
	# In the page cache first, so that no run reads the disk.
	case $t in
	q4 | q8 | f16) cat "$WORK/1b-$t/model.safetensors" "$gguf" >/dev/null ;;
	*) cat "$gguf" >/dev/null ;;
	esac
done

# One line of JSON per process, alternating the engines.
results="$WORK/results.jsonl"
log="$WORK/stderr.log"
: >"$results"
: >"$log"
busy= # the busy loop's pid while one runs (busy_start)
# On a failure, the end of the engines' stderr says why.
on_exit() {
	local rc=$?
	busy_stop
	if [ "$rc" -ne 0 ]; then
		echo "failed (exit $rc); the end of $log:" >&2
		tail -n 5 "$log" >&2
	fi
}
trap on_exit EXIT
# weight_bytes is what a decode step reads of a type's weights: the
# GGUF file, or the MLX folder's safetensors.
weight_bytes() {
	case $1 in
	q4 | q8 | f16) stat -L -c %s "$WORK/1b-$1/model.safetensors" ;;
	*) stat -L -c %s "$WORK/1b-$1.gguf" ;;
	esac
}
run_driftwood() { # type prompt threads load
	driftwood bench --model "$(dw_model "$1")" --threads "$3" --kv-type "$KV_TYPE" \
		--prompt-tokens "$2" --gen-tokens "$GEN" --runs 1 --json 2>>"$log" |
		jq -c --arg t "$1" --argjson p "$2" --argjson load "$4" --argjson bytes "$(weight_bytes "$1")" \
			'{engine: "driftwood", type: $t, prompt: $p, threads: .threads, load: $load, bytes: $bytes, prefill: .prefill_tok_per_s, decode: .decode_tok_per_s, rss: .peak_rss_mib, kernels: (.kernels // null), prefetch: (.prefetch_ahead // null)}' >>"$results"
}
run_llamacpp() { # type prompt threads load
	"$WORK/llamacpp_bench" "$WORK/1b-$(gguf_type "$1").gguf" "$2" "$GEN" "$3" "$bins" "$FLASH" 2>>"$log" |
		jq -c --arg t "$1" --argjson p "$2" --argjson load "$4" --argjson bytes "$(stat -L -c %s "$WORK/1b-$(gguf_type "$1").gguf")" \
			'{engine: "llama.cpp", type: $t, prompt: $p, threads: .threads, load: $load, bytes: $bytes, prefill: .prefill_tok_per_s, decode: .decode_tok_per_s, system_info: .system_info}' >>"$results"
}
# busy_start pins a busy loop to the last CPU; busy_stop ends it.
busy_start() {
	taskset -c "$(($(nproc) - 1))" sh -c 'while :; do :; done' &
	busy=$!
}
busy_stop() {
	if [ -n "$busy" ]; then
		kill "$busy" 2>/dev/null || true
		wait "$busy" 2>/dev/null || true
		busy=
	fi
}
loads=(0)
if [ "$LOADED" = 1 ]; then loads=(0 1); fi
for run in $(seq "$RUNS"); do
	for t in "${types[@]}"; do
		for p in "${prompts[@]}"; do
			for n in "${threads_list[@]}"; do
				for load in "${loads[@]}"; do
					echo "run $run/$RUNS: $t, prompt $p, $n threads$([ "$load" = 1 ] && echo ", a busy core") ..." >&2
					if [ "$load" = 1 ]; then busy_start; fi
					if [ $((run % 2)) -eq 1 ]; then
						run_driftwood "$t" "$p" "$n" "$load"
						run_llamacpp "$t" "$p" "$n" "$load"
					else
						run_llamacpp "$t" "$p" "$n" "$load"
						run_driftwood "$t" "$p" "$n" "$load"
					fi
					busy_stop
				done
			done
		done
	done
done

# The read bandwidth and the int8 peak, for each thread count.
bw="$WORK/readbw.jsonl"
peak="$WORK/int8peak.jsonl"
: >"$bw"
: >"$peak"
for n in "${threads_list[@]}"; do
	"$WORK/readbw" 1024 "$n" 5 >>"$bw"
	if [ -x "$WORK/int8peak" ]; then "$WORK/int8peak" "$n" >>"$peak"; fi
done
# The matmuls' multiply-adds for one prompt token (the logits are the
# last token's only, so the output projection is left out).
macs=$(jq '(.head_dim // (.hidden_size / .num_attention_heads)) as $hd |
	.num_hidden_layers * .hidden_size * (2 * .num_attention_heads * $hd + 2 * .num_key_value_heads * $hd + 3 * .intermediate_size)' \
	"$WORK/1b-$(mlx_type "${types[0]}")/config.json")

# Time to first token after start: load, tokenise, prefill a short chat
# prompt, sample one token. On q4 if it is measured, with the most threads.
ttft_type=${types[0]}
for t in "${types[@]}"; do
	if [ "$t" = q4 ]; then ttft_type=q4; fi
done
ttft_threads=$(printf '%s\n' "${threads_list[@]}" | sort -n | tail -1)
ttfts="$WORK/ttft.txt"
: >"$ttfts"
for run in $(seq "$RUNS"); do
	start=$(date +%s.%N)
	driftwood run --model "$(dw_model "$ttft_type")" --threads "$ttft_threads" --chat \
		--prompt "$CHAT_PROMPT" --max-tokens 1 >/dev/null 2>>"$log"
	echo "$(date +%s.%N) - $start" | bc >>"$ttfts"
done
trap - EXIT

cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
if [ -z "$cpu" ]; then
	cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1 || true)
fi
echo "CPU: ${cpu:-unknown} ($(nproc) CPUs online, $(uname -sr))"
jq -rs --arg env "$DRIFTWOOD_ENV" --arg gen "$GEN" --arg flash "$FLASH" --arg kv "$KV_TYPE" '
	def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
	(map(select(.engine == "driftwood")) | map(.kernels // empty) | unique | join(", ")) as $k |
	(map(select(.engine == "llama.cpp")) | map(.system_info // empty) | first // "unknown") as $si |
	(map(select(.engine == "driftwood" and .prefetch != null)) | group_by([.type, .threads]) |
		map("\(.[0].type) \(.[0].threads)T \(map(.prefetch / 1024) | unique | map(tostring) | join("/")) KiB") | join(", ")) as $pf |
	"Driftwood kernels: \(if $k == "" then "unknown" else $k end), \($kv) KV cache" +
		(if $env == "" then "" else "  (environment: \($env))" end),
	"Driftwood prefetch distances (measured on the first decode steps, ahead.go): \(if $pf == "" then "unknown" else $pf end)",
	"llama.cpp (node-llama-cpp 3.21.1 prebuilt, CPU backend picked by ggml, f16 KV cache, flash attention \($flash)): \($si | sub(" \\| $"; ""))",
	"Llama-3.2-1B shape, the same random weights in both engines, decode \($gen) tokens, median of \(map(select(.engine == "driftwood")) | group_by([.type, .prompt, .threads, .load]) | map(length) | min) alternating runs (tok/s)" +
		(if any(.load == 1) then "; \"+busy\": a busy loop pinned to the last CPU throughout" else "" end),
	""
' "$results"
{
	printf 'type\tprompt\tthreads\tprefill\t\t\tdecode\t\t\tdriftwood decode\n'
	printf '\t\t\tdriftwood\tllama.cpp\tratio\tdriftwood\tllama.cpp\tratio\tvs 1 thread\n'
	jq -rs '
		def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
		{q4: 0, q8: 1, f16: 2, Q8_0: 3, Q4_K_M: 4} as $order |
		group_by([.type, .prompt, .threads, .load]) |
		map({type: .[0].type, prompt: .[0].prompt, threads: .[0].threads, load: .[0].load,
			dp: (map(select(.engine == "driftwood") | .prefill) | median),
			dd: (map(select(.engine == "driftwood") | .decode) | median),
			lp: (map(select(.engine == "llama.cpp") | .prefill) | median),
			ld: (map(select(.engine == "llama.cpp") | .decode) | median)}) |
		sort_by([$order[.type], .prompt, .threads, .load]) |
		. as $rows |
		.[] |
		. as $r |
		($rows | map(select(.type == $r.type and .prompt == $r.prompt and .threads == 1 and .load == $r.load)) | first | .dd) as $one |
		[.type, .prompt, "\(.threads)\(if .load == 1 then " +busy" else "" end)", .dp, .lp, .dd, .ld, ($one // 0)] | @tsv
	' "$results" |
		awk -F'\t' -v OFS='\t' '
			BEGIN {
				name["q4"] = "q4/Q4_0"; name["q8"] = "q8/Q8_0"; name["f16"] = "f16/F16"
				name["Q8_0"] = "Q8_0 (one file)"; name["Q4_K_M"] = "Q4_K_M (one file)"
			}
			{
				scale = $8 > 0 ? sprintf("%.2fx", $6 / $8) : "-"
				print name[$1], $2, $3, sprintf("%.1f", $4), sprintf("%.1f", $5), sprintf("%.2fx", $4 / $5),
					sprintf("%.1f", $6), sprintf("%.1f", $7), sprintf("%.2fx", $6 / $7), scale
			}'
} | column -t -s $'\t'
echo
jq -rs '
	"Read bandwidth (bench/readbw.c, 1 GiB, best of 5): " + (map("\(.threads) thread(s) \(.gb_per_s) GB/s") | join(", "))
' "$bw"
jq -rs --slurpfile bw "$bw" '
	def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
	($bw | map({key: "\(.threads)", value: .gb_per_s}) | from_entries) as $probe |
	"Decode as a read rate (weights bytes a token × tok/s) and its share of that bandwidth:",
	(map(select(.load == 0)) | group_by([.type, .threads]) | .[] |
		(map(select(.engine == "driftwood")) | (.[0].bytes / 1e9) * (map(.decode) | median)) as $d |
		(map(select(.engine == "llama.cpp")) | (.[0].bytes / 1e9) * (map(.decode) | median)) as $l |
		($probe["\(.[0].threads)"] // 0) as $p |
		"  \(.[0].type), \(.[0].threads) thread(s): Driftwood \($d * 100 | round / 100) GB/s" +
		(if $p > 0 then " (\($d / $p * 100 | round) %)" else "" end) +
		", llama.cpp \($l * 100 | round / 100) GB/s" + (if $p > 0 then " (\($l / $p * 100 | round) %)" else "" end))
' "$results"
[ -s "$peak" ] && jq -rs --slurpfile peak "$peak" --argjson macs "$macs" '
	def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
	($peak | map({key: "\(.threads)", value: .}) | from_entries) as $pk |
	"Int8 peak (bench/int8peak.c, \($peak[0].isa)\(if $peak[0].amx_gmac_per_s then " and AMX" else "" end)): " +
		($peak | map("\(.threads) thread(s) \(.gmac_per_s)\(if .amx_gmac_per_s then " (AMX \(.amx_gmac_per_s))" else "" end) GMAC/s") | join(", ")),
	"Prefill as multiply-adds (\($macs / 1e6 | round) M a token × tok/s) and its share of that peak\(if $peak[0].amx_gmac_per_s then " (vectors; AMX tiles)" else "" end):",
	(map(select(.load == 0)) | group_by([.type, .prompt, .threads]) | .[] |
		($pk["\(.[0].threads)"]) as $p |
		def share: if $p then " (\(. / $p.gmac_per_s * 100 | round) %\(if $p.amx_gmac_per_s then "; \(. / $p.amx_gmac_per_s * 1000 | round / 10) %" else "" end))" else "" end;
		(map(select(.engine == "driftwood") | .prefill) | median * $macs / 1e9) as $d |
		(map(select(.engine == "llama.cpp") | .prefill) | median * $macs / 1e9) as $l |
		"  \(.[0].type), prompt \(.[0].prompt), \(.[0].threads) thread(s): Driftwood \($d | round) GMAC/s\($d | share), llama.cpp \($l | round) GMAC/s\($l | share)")
' "$results"
jq -rs '
	map(select(.engine == "driftwood")) | group_by(.type) |
	"Driftwood peak RSS: " + (map("\(.[0].type) \(map(.rss) | max | round) MiB") | join(", "))
' "$results"
sort -n "$ttfts" | awk -v type="$ttft_type" -v threads="$ttft_threads" -v prompt="$CHAT_PROMPT" '
	{ t[NR] = $1 }
	END {
		m = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
		runs = ""
		for (i = 1; i <= NR; i++) runs = runs (i > 1 ? ", " : "") sprintf("%.2f", t[i])
		printf "Driftwood time to first token after start (run --chat \"%s\", 1B %s, %d thread(s)): median %.2f s of %d (%s)\n", prompt, type, threads, m, NR, runs
	}'
echo "results: $results (one line per process)"
