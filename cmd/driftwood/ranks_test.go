package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

func requireMLX(t *testing.T) {
	t.Helper()
	if _, err := mlxbridge.Load(""); err != nil {
		t.Skipf("MLX tests skipped: %v", err)
	}
}

// rankPrompts are the ten prompts the split model answers as one
// process does.
var rankPrompts = []string{
	"the sea", "a boat on the water", "gulls", "What is the capital of France?", "Name three rivers.",
	"driftwood on the shore", "the tide comes in", "storm", "How many legs does a spider have?", "salt and wind",
}

// TestRunRanks: `run --ranks 2` (this process rank 0, a second one
// started as `driftwood rank`, MLX's ring backend over loopback) gives
// the greedy ids one process gives, for ten prompts on a float and a
// 4-bit model.
func TestRunRanks(t *testing.T) {
	requireMLX(t)
	for _, name := range []string{"tiny-f32", "tiny-mlx-q4"} {
		for _, p := range rankPrompts {
			args := []string{"--model", golden.ModelDir(name), "--prompt", p, "--temp", "0", "--max-tokens", "16", "--ignore-eos", "--json"}
			one, errOne, code := runCLI(t, append([]string{"run", "--backend", "mlx"}, args...)...)
			if code != 0 {
				t.Fatalf("one process: %d: %s", code, errOne)
			}
			// A process joins one group in its life (MLX keeps it): each
			// split run is a process of its own, as it is for a user.
			two, err := driftwood(t, append([]string{"run", "--config", filepath.Join(t.TempDir(), "none.toml"), "--ranks", "2"}, args...)...)
			if err != nil {
				t.Fatalf("two ranks: %v", err)
			}
			if a, b := jsonIDs(t, one), jsonIDs(t, two); a != b {
				t.Errorf("%s, %q: two ranks %s, one process %s", name, p, b, a)
			}
		}
	}
}

// TestRunRanksSession: a session moves between a split model and one
// process: three turns alternating `--ranks 2` and one process give the
// replies three turns in one process give (greedy).
func TestRunRanksSession(t *testing.T) {
	requireMLX(t)
	turns := func(split []bool) []string {
		dir, cfg := t.TempDir(), filepath.Join(t.TempDir(), "none.toml")
		var replies []string
		for i, ranks := range split {
			args := []string{"run", "--config", cfg, "--sessions-dir", dir, "--session", "s", "--model", golden.ModelDir("tiny-f32"),
				"--prompt", rankPrompts[i], "--temp", "0", "--max-tokens", "8", "--ignore-eos", "--json"}
			if ranks {
				args = append(args, "--ranks", "2")
			} else {
				args = append(args, "--backend", "mlx")
			}
			out, err := driftwood(t, args...)
			if err != nil {
				t.Fatalf("turn %d (split %v): %v", i, ranks, err)
			}
			replies = append(replies, jsonIDs(t, out))
		}
		return replies
	}
	want, got := turns([]bool{false, false, false}), turns([]bool{true, false, true})
	if !slices.Equal(got, want) {
		t.Errorf("split, one, split: %v\none process: %v", got, want)
	}
}

// driftwood runs this test binary as driftwood with args and returns
// its output.
func driftwood(t *testing.T, args ...string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, errOut.String())
	}
	return string(out), err
}

// jsonIDs is the token ids of run --json's output, joined.
func jsonIDs(t *testing.T, out string) string {
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, `{"id":`); ok {
			ids = append(ids, rest[:strings.IndexByte(rest, ',')])
		}
	}
	if len(ids) == 0 {
		t.Fatalf("no tokens in %q", out)
	}
	return strings.Join(ids, ",")
}

// TestRunRankLost: when another rank dies mid-reply, run ends at once
// with an error that says so and which rank ended, instead of waiting
// for it; and the session keeps the prompt and the reply so far (the
// state computed again on the CPU), from which it goes on.
func TestRunRankLost(t *testing.T) {
	requireMLX(t)
	if runtime.GOOS != "linux" {
		t.Skip("finds the other rank through /proc")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "lost.toml") // marks this test's ranks
	sessionsDir := t.TempDir()
	run := exec.Command(self, "run", "--config", cfg, "--sessions-dir", sessionsDir, "--session", "s", "--ranks", "2",
		"--model", golden.ModelDir("tiny-f32"), "--prompt", "the sea", "--max-tokens", "400", "--ignore-eos")
	run.Env = append(os.Environ(), testMainEnv+"=1")
	var out, errOut syncBuffer
	run.Stdout, run.Stderr = &out, &errOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	pid := otherRank(cfg)
	for out.Len() < 40 { // the reply has begun
		select {
		case err := <-done:
			t.Fatalf("run ended before a rank was stopped: %v\n%s", err, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if pid == 0 {
		run.Process.Kill()
		t.Fatal("the other rank was not found")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	start := time.Now()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		run.Process.Kill()
		t.Fatalf("run still waits 30 s after rank 1 died:\n%s", errOut.String())
	}
	msg := errOut.String()
	if err == nil || !strings.Contains(msg, "running across 2 ranks") || !strings.Contains(msg, "rank 1: signal: killed") ||
		!strings.Contains(msg, "saved session s (") {
		t.Errorf("run after rank 1 died: %v\n%s", err, msg)
	}
	more, err := driftwood(t, "run", "--config", cfg, "--sessions-dir", sessionsDir, "--session", "s", "--backend", "mlx",
		"--model", golden.ModelDir("tiny-f32"), "--prompt", "and the gulls", "--max-tokens", "8", "--json")
	if err != nil || !strings.Contains(more, `"id"`) {
		t.Errorf("the saved session does not go on: %v\n%s", err, more)
	}
	t.Logf("run ended %s after rank 1 died, having printed %d bytes", time.Since(start).Round(time.Millisecond), out.Len())
}

// otherRank finds the pid of the rank process started with config path
// cfg, waiting for it to start.
func otherRank(cfg string) int {
	for range 1500 {
		dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, d := range dirs {
			b, err := os.ReadFile(d)
			if args := strings.Split(string(b), "\x00"); err == nil && len(args) > 1 && args[1] == "rank" && strings.Contains(string(b), cfg) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

// syncBuffer is a buffer two goroutines may use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
