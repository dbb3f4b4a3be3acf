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

. scripts/tmuxlib.sh
bin=${DRIFTWOOD:-}
if [ -z "$bin" ]; then
	bin="$work/driftwood"
	go build -o "$bin" ./cmd/driftwood
fi
model="$PWD/testdata/models/tiny-f32"

# start ARGS...: the chat on the tiny model, in $work.
start() { start_in "$work" "$@" --model "$model"; }

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
wait_for "The conversation is saved as session chat-"
ls "$work"/data/driftwood/sessions/chat-*.safetensors >/dev/null || fail "no session file"

start --continue
wait_for "restored"
wait_for "│ Hello from tmux"
keep resume
tmux -S "$sock" send-keys -t dw "/quit" Enter
wait_for "exit status 0"
echo "tui-smoke: ok"
