#!/usr/bin/env bash
# The chat's life in a real terminal (tmux), as a user meets it:
#  1. a chat with two replies, then its process killed by SIGHUP (the
#     terminal closed), SIGTERM and SIGKILL: both turns are in the session
#     each time;
#  2. a chat quit and resumed with --continue and with --session, without
#     --model and from another folder: the same conversation on the same
#     model;
#  3. a switch to a controller not yet compiled, then a message at once:
#     the reply is the controller's (digits only for regex [0-9]+).
#
#   scripts/tui-lifecycle.sh                  # builds ./cmd/driftwood
#   DRIFTWOOD=/path/to/driftwood scripts/tui-lifecycle.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/tmuxlib.sh
bin=${DRIFTWOOD:-}
if [ -z "$bin" ]; then
	bin="$work/driftwood"
	go build -o "$bin" ./cmd/driftwood
fi
model="$PWD/testdata/models/tiny-f32"
sessions="$work/data/driftwood/sessions"
printf 'max_tokens = 8\n[sampling]\nseed = 7\n' >"$work/config/driftwood/config.toml"

# turns NAME: how many user turns session NAME holds on disk.
turns() { "${env[@]}" "$bin" sessions show "$1" | grep -c '^\[user\]' || true; }

# reply_done: waits until the reply under way has ended: a /set typed
# now runs only once the chat is idle (until then it is refused and stays
# typed, and Enter tries it again), and its notice names a seed used once.
done_count=0
reply_done() {
	done_count=$((done_count + 1))
	local seed=$((100 + done_count))
	keys "/set seed $seed" Enter
	for _ in $(seq 300); do
		if tmux -S "$sock" capture-pane -p -t dw | grep -qF "seed = $seed"; then
			return 0
		fi
		keys Enter
		sleep 0.2
	done
	fail "the reply never ended"
}

# 1. Killed after two replies, three ways.
for sig in HUP TERM KILL; do
	name="killed-$sig"
	start_in "$work" --model "$model" --session "$name"
	wait_for "ctx 0/512"
	keys "first message" Enter
	reply_done
	keys "second message" Enter
	reply_done
	pid=$(chat_pid)
	[ -n "$pid" ] || fail "no driftwood process in the pane"
	if [ "$sig" = HUP ]; then
		tmux -S "$sock" kill-server # closing the terminal: SIGHUP to the chat
	else
		kill -s "$sig" "$pid"
	fi
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "the chat outlived SIG$sig"
	got=$(turns "$name")
	[ "$got" = 2 ] || fail "after SIG$sig the session holds $got of 2 turns"
	echo "SIG$sig: 2 of 2 turns saved"
done

# 2. Resumed without --model, from another folder.
elsewhere="$work/elsewhere"
mkdir -p "$elsewhere"
start_in "$work" --model "$model"
wait_for "ctx 0/512"
keys "remember the river" Enter
reply_done
keys "/quit" Enter
wait_for "exit status 0"
wait_for "resume it with: driftwood --continue"
saved=$(ls "$sessions" | grep '^chat-' | sed 's/\.safetensors$//')
start_in "$elsewhere" --continue
wait_for "restored" 20
wait_for "│ remember the river"
wait_for "tiny-f32  cpu"
keys "/quit" Enter
wait_for "exit status 0"
start_in "$elsewhere" --session "$saved"
wait_for "restored" 20
wait_for "│ remember the river"
keys "/quit" Enter
wait_for "exit status 0"
echo "resumed $saved without --model, from another folder"

# 3. A message sent at once after a switch to a controller never compiled
# here (the compile cache in $work is empty): the controller governs it.
start_in "$work" --model "$model" --session digits
wait_for "ctx 0/512"
keys "/controller regex [0-9]+" Enter
keys "count to three" Enter
reply_done
keys "/quit" Enter
wait_for "exit status 0"
reply=$("${env[@]}" "$bin" sessions show digits | awk '/^\[assistant\]/{getline; print; exit}')
[[ "$reply" =~ ^[0-9]+$ ]] || fail "the reply after the switch is \"$reply\", not digits"
echo "the switch governed the next message: \"$reply\""
echo "tui-lifecycle: ok"
