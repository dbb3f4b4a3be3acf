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
func TestTUISmoke(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it): the terminal smoke test did not run")
	}
	bin := filepath.Join(t.TempDir(), "driftwood")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "../../scripts/tui-smoke.sh")
	cmd.Env = append(os.Environ(), "DRIFTWOOD="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tui-smoke: %v\n%s", err, out)
	}
}
