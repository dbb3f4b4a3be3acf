#!/usr/bin/env bash
# Smoke test of the chat in a real terminal: runs driftwood in tmux with
# the tiny test model, types a message with send-keys, checks the captured
# pane, quits (the conversation is auto-saved), and resumes it with
# --continue; in between it switches to the shipped json controller, which
# must work with nothing built and from a folder that is not the
# repository's. Takes a few seconds after the build.
#
#   scripts/tui-smoke.sh                      # builds ./cmd/driftwood
#   DRIFTWOOD=/path/to/driftwood scripts/tui-smoke.sh
#   SCREENSHOTS=docs/screenshots scripts/tui-smoke.sh   # also keeps the panes
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null; then
	echo "tui-smoke: needs tmux (apt-get install tmux, brew install tmux)" >&2
	exit 1
fi
work=$(mktemp -d)
sock="$work/tmux.sock"
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

bin=${DRIFTWOOD:-}
if [ -z "$bin" ]; then
	bin="$work/driftwood"
	go build -o "$bin" ./cmd/driftwood
fi
model="$PWD/testdata/models/tiny-f32"

# Everything the chat writes stays in $work; the hub is never asked.
env=(env XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state"
	XDG_CACHE_HOME="$work/cache" HF_HOME="$work/hf" HF_HUB_OFFLINE=1 TERM=xterm-256color)

# Short, reproducible replies: a long one at a fresh seed could fill the
# window and scroll the typed message off the 30-line pane.
mkdir -p "$work/config/driftwood"
printf 'max_tokens = 32\n[sampling]\nseed = 7\n' >"$work/config/driftwood/config.toml"

fail() {
	echo "tui-smoke: $1; the pane was:" >&2
	tmux -S "$sock" capture-pane -p -t dw >&2 || true
	exit 1
}

# wait_for TEXT: until the pane shows TEXT (10 s at most).
wait_for() {
	for _ in $(seq 100); do
		if tmux -S "$sock" capture-pane -p -t dw | grep -qF -- "$1"; then
			return 0
		fi
		sleep 0.1
	done
	fail "no \"$1\" on the screen"
}

# start ARGS...: runs driftwood in a 100×30 pane that stays after it exits.
start() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	# A loaded machine sometimes loses the first server start; try again.
	for try in 1 2 3; do
		if tmux -S "$sock" new-session -d -s dw -x 100 -y 30 -c "$work" \
			"${env[*]} $bin $* --model $model; echo \"exit status \$?\"; sleep 60"; then
			return 0
		fi
		sleep 1
	done
	fail "tmux would not start"
}

keep() {
	if [ -n "${SCREENSHOTS:-}" ]; then
		mkdir -p "$SCREENSHOTS"
		tmux -S "$sock" capture-pane -p -t dw >"$SCREENSHOTS/$1.txt"
		tmux -S "$sock" capture-pane -p -e -t dw >"$SCREENSHOTS/$1.ansi"
	fi
}

start
wait_for "ctx 0/512"
tmux -S "$sock" send-keys -t dw "Hello from tmux" Enter
wait_for "tok/s"
wait_for "│ Hello from tmux"
tmux -S "$sock" send-keys -t dw "/show" Enter
wait_for "backend     cpu"
keep chat
tmux -S "$sock" send-keys -t dw "/controller json" Enter
wait_for "◆ json"
tmux -S "$sock" send-keys -t dw C-c
wait_for "press ctrl+c again to quit"
tmux -S "$sock" send-keys -t dw C-c
wait_for "exit status 0"
wait_for "Saved the conversation as session chat-"
ls "$work"/data/driftwood/sessions/chat-*.safetensors >/dev/null || fail "no session file"

start --continue
wait_for "restored"
wait_for "│ Hello from tmux"
keep resume
tmux -S "$sock" send-keys -t dw "/quit" Enter
wait_for "exit status 0"
echo "tui-smoke: ok"
