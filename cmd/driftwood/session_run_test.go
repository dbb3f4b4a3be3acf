package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// TestConcurrentSessionTurns runs 20 `driftwood run --session same` at
// once, each its own process: every turn is either saved, and then in the
// session's transcript afterwards, or refused saying the session is in
// use. (Before sessions were locked, 13 of 20 failed on another
// process's temporary file and 3 of the 7 saved turns were lost.)
func TestConcurrentSessionTurns(t *testing.T) {
	if args := os.Getenv("DRIFTWOOD_TEST_MAIN"); args != "" {
		os.Exit(realMain(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	dir := t.TempDir()
	xdg := t.TempDir()
	const n = 20
	type result struct {
		stderr string
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"run", "--config", filepath.Join(xdg, "none.toml"), "--model", golden.ModelDir("tiny-f32"),
				"--sessions-dir", dir, "--session", "same", "--prompt", fmt.Sprintf("x%d", i), "--max-tokens", "1", "--threads", "1"}
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentSessionTurns$")
			cmd.Env = append(os.Environ(), "DRIFTWOOD_TEST_MAIN="+strings.Join(args, "\x1f"),
				"XDG_DATA_HOME="+xdg, "XDG_CACHE_HOME="+xdg, "XDG_STATE_HOME="+xdg, "XDG_CONFIG_HOME="+xdg)
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			err := cmd.Run()
			results[i] = result{errOut.String(), err}
		}()
	}
	wg.Wait()
	snap, err := sessions.Store{Dir: dir}.Open("same")
	if err != nil {
		t.Fatalf("%v; the first turn: %v\n%s", err, results[0].err, results[0].stderr)
	}
	defer snap.Close()
	have := map[string]bool{}
	for _, m := range snap.Meta.Messages {
		have[m.Content] = true
	}
	saved := 0
	for i, r := range results {
		switch {
		case r.err == nil && strings.Contains(r.stderr, "saved session same"):
			saved++
			if !have[fmt.Sprintf("x%d", i)] {
				t.Errorf("turn %d reported saved but is missing from the session", i)
			}
		case r.err != nil && strings.Contains(lastLine(r.stderr), `session "same" is in use by another Driftwood process`):
			t.Logf("turn %d refused: %s", i, r.stderr)
		default:
			t.Errorf("turn %d: %v\n%s", i, r.err, r.stderr)
		}
	}
	t.Logf("%d of %d turns saved", saved, n)
	if saved == 0 {
		t.Error("no turn was saved")
	}
}

// lastLine is the last line of s: the error of a failed run.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestEmptySessionName: `--session ”` is an error, not a run without a
// session.
func TestEmptySessionName(t *testing.T) {
	_, errOut, code := runCLI(t, "run", "--model", golden.ModelDir("tiny-f32"), "--session", "", "--sessions-dir", t.TempDir(), "--prompt", "hi", "--max-tokens", "2")
	if code == 0 || !strings.Contains(errOut, "--session needs a name") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestRunSessionTooLong: a prompt that does not fit the window is refused
// with the reason, and the session goes on afterwards.
func TestRunSessionTooLong(t *testing.T) {
	dir, model := t.TempDir(), golden.ModelDir("tiny-f32")
	turn := func(prompt string) (string, int) {
		_, errOut, code := runCLI(t, "run", "--model", model, "--session", "s", "--sessions-dir", dir, "--prompt", prompt, "--max-tokens", "2")
		return errOut, code
	}
	if errOut, code := turn("Hello"); code != 0 {
		t.Fatalf("first turn: %s", errOut)
	}
	if errOut, code := turn(strings.Repeat("paste ", 2500)); code == 0 || !strings.Contains(errOut, "does not fit") {
		t.Errorf("an oversized turn: exit %d, %s", code, errOut)
	}
	if errOut, code := turn("short"); code != 0 || !strings.Contains(errOut, "saved session s") {
		t.Errorf("the turn after it: exit %d, %s", code, errOut)
	}
}

// TestRunSessionPastTheWindow: twelve turns of about sixty tokens on the
// 512-token model all succeed; the oldest turns leave the model's view,
// the session says so and keeps every message.
func TestRunSessionPastTheWindow(t *testing.T) {
	dir, model := t.TempDir(), golden.ModelDir("tiny-f32")
	notes := 0
	for i := range 12 {
		_, errOut, code := runCLI(t, "run", "--model", model, "--session", "s", "--sessions-dir", dir, "--context", "512",
			"--prompt", fmt.Sprintf("Turn %d: one more thing about rivers?", i), "--max-tokens", "24", "--temp", "0")
		if code != 0 {
			t.Fatalf("turn %d: exit %d, %s", i, code, errOut)
		}
		if strings.Contains(errOut, "left the model's view") {
			notes++
		}
	}
	snap, err := sessions.Store{Dir: dir}.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if len(snap.Meta.Messages) != 24 || snap.Meta.OutOfView == 0 || notes == 0 {
		t.Errorf("%d messages, %d out of view, %d notes", len(snap.Meta.Messages), snap.Meta.OutOfView, notes)
	}
}

// TestSessionKeepsAnUnavailableController: a session whose controller was
// loaded by path keeps it, and its key-value store, while the file is
// gone, and resumes both from the path once it is back; each process
// says what happened.
func TestSessionKeepsAnUnavailableController(t *testing.T) {
	dir, xdg, model := t.TempDir(), t.TempDir(), golden.ModelDir("tiny-f32")
	for _, v := range []string{"XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		t.Setenv(v, xdg)
	}
	src, err := os.ReadFile("testdata/steps.wat")
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "steps.wat")
	if err := os.WriteFile(probe, src, 0o644); err != nil {
		t.Fatal(err)
	}
	turn := func(extra ...string) string {
		t.Helper()
		args := append([]string{"run", "--model", model, "--session", "s", "--sessions-dir", dir, "--prompt", "Hi", "--max-tokens", "3"}, extra...)
		_, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", extra, code, errOut)
		}
		return errOut
	}
	steps := func() int {
		t.Helper()
		snap, err := sessions.Store{Dir: dir}.Open("s")
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		c := snap.Meta.Controller
		if c == nil || c.Name != "steps" || c.Path != probe {
			t.Fatalf("the session's controller is %+v, want steps from %s", c, probe)
		}
		return len(c.KV["steps"])
	}
	turn("--controller", probe)
	first := steps()
	if first == 0 {
		t.Fatal("the controller stored nothing")
	}
	if err := os.Rename(probe, probe+".away"); err != nil {
		t.Fatal(err)
	}
	if errOut := turn(); !strings.Contains(errOut, "the session's controller steps is not available") || !strings.Contains(errOut, "keeps it") {
		t.Errorf("without the file: %s", errOut)
	}
	if n := steps(); n != first {
		t.Errorf("the store holds %d steps after a turn without the controller, want the %d saved", n, first)
	}
	if err := os.Rename(probe+".away", probe); err != nil {
		t.Fatal(err)
	}
	if errOut := turn(); strings.Contains(errOut, "not available") {
		t.Errorf("with the file back: %s", errOut)
	}
	if n := steps(); n <= first {
		t.Errorf("the store holds %d steps, want more than %d: the controller did not resume with its store", n, first)
	}
}

// TestRunSessionKVTypeConverted: a session saved from an f16 cache and
// continued with --kv-type f32 says once that its state was converted.
func TestRunSessionKVTypeConverted(t *testing.T) {
	dir := t.TempDir()
	model := golden.ModelDir("tiny-f32")
	if _, errOut, code := runCLI(t, "run", "--model", model, "--session", "s", "--sessions-dir", dir, "--prompt", "Hello", "--max-tokens", "4", "--temp", "0"); code != 0 {
		t.Fatalf("new session: exit %d, %s", code, errOut)
	}
	_, errOut, code := runCLI(t, "run", "--model", model, "--session", "s", "--sessions-dir", dir, "--kv-type", "f32", "--prompt", "More", "--max-tokens", "4", "--temp", "0")
	if code != 0 || strings.Count(errOut, "its f16 KV state converted to f32") != 1 {
		t.Errorf("continued with an f32 cache: exit %d, %s", code, errOut)
	}
	_, errOut, _ = runCLI(t, "run", "--model", model, "--session", "s", "--sessions-dir", dir, "--kv-type", "f32", "--prompt", "Again", "--max-tokens", "4", "--temp", "0")
	if strings.Contains(errOut, "converted") {
		t.Errorf("saved from an f32 cache and continued in one, it says: %s", errOut)
	}
}
