package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTUISmoke runs scripts/tui-smoke.sh: the real binary in a real
// terminal (tmux), typing a message, quitting, and resuming the session.
// .ci/run installs tmux so that CI runs it.
func TestTUISmoke(t *testing.T) { runTmuxScript(t, "tui-smoke.sh") }

// TestTUILifecycle runs scripts/tui-lifecycle.sh: the chat killed by
// SIGHUP, SIGTERM and SIGKILL after two replies keeps both; a chat
// resumes without --model from another folder; a message sent at once
// after a switch to a controller not yet compiled runs under it.
func TestTUILifecycle(t *testing.T) { runTmuxScript(t, "tui-lifecycle.sh") }

// runTmuxScript builds the binary and runs a script of scripts/ on it.
func runTmuxScript(t *testing.T, script string) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it): the terminal test " + script + " did not run")
	}
	bin := filepath.Join(t.TempDir(), "driftwood")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", script))
	cmd.Env = append(os.Environ(), "DRIFTWOOD="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	} else {
		t.Logf("%s", out)
	}
}
