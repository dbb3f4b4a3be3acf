# Helpers for the scripts that drive the real binary in tmux (sourced:
# tui-smoke.sh, tui-lifecycle.sh). The caller sets bin (the binary) and
# may set model; everything the chat writes stays in $work, and the hub
# is never asked.

if ! command -v tmux >/dev/null; then
	echo "$(basename "$0"): needs tmux (apt-get install tmux, brew install tmux)" >&2
	exit 1
fi
work=$(mktemp -d)
sock="$work/tmux.sock"
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

env=(env XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state"
	XDG_CACHE_HOME="$work/cache" HF_HOME="$work/hf" HF_HUB_OFFLINE=1 OLLAMA_MODELS="$work/ollama"
	LMSTUDIO_MODELS="$work/lmstudio" TERM=xterm-256color)

# Short, reproducible replies: a long one at a fresh seed could fill the
# window and scroll the typed message off the 30-line pane.
mkdir -p "$work/config/driftwood"
printf 'max_tokens = 32\n[sampling]\nseed = 7\n' >"$work/config/driftwood/config.toml"

fail() {
	echo "$(basename "$0"): $1; the pane was:" >&2
	tmux -S "$sock" capture-pane -p -t dw >&2 || true
	exit 1
}

# wait_for TEXT [SECONDS]: until the pane shows TEXT (10 s unless told).
wait_for() {
	for _ in $(seq $((${2:-10} * 10))); do
		if tmux -S "$sock" capture-pane -p -t dw | grep -qF -- "$1"; then
			return 0
		fi
		sleep 0.1
	done
	fail "no \"$1\" on the screen"
}

# start_in DIR ARGS...: runs driftwood with ARGS in DIR, in a 100×30 pane
# that stays after it exits.
start_in() {
	local dir=$1
	shift
	tmux -S "$sock" kill-server 2>/dev/null || true
	# A loaded machine sometimes loses the first server start; try again.
	for try in 1 2 3; do
		if tmux -S "$sock" new-session -d -s dw -x 100 -y 30 -c "$dir" \
			"${env[*]} $bin $*; echo \"exit status \$?\"; sleep 60"; then
			return 0
		fi
		sleep 1
	done
	fail "tmux would not start"
}

# keys ARGS...: tmux send-keys to the pane.
keys() { tmux -S "$sock" send-keys -t dw "$@"; }

# chat_pid: the driftwood process in the pane (the pane's shell's child).
chat_pid() { pgrep -P "$(tmux -S "$sock" list-panes -t dw -F '#{pane_pid}')" | head -1; }
