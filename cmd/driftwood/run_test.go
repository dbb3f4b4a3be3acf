package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// runCLI runs the driftwood command line with a config file that does not
// exist (so only flags and defaults apply).
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	if len(args) > 0 && (args[0] == "run" || args[0] == "bench") {
		args = append([]string{args[0], "--config", filepath.Join(t.TempDir(), "none.toml")}, args[1:]...)
	}
	code = realMain(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// TestRunGoldenGreedy is the engine issue's acceptance check: `run --json`
// at temperature 0 prints the golden continuation for every test model.
func TestRunGoldenGreedy(t *testing.T) {
	floatKernels(t)
	for _, name := range append(slices.Clone(golden.Models), golden.QwenModels...) {
		g, err := golden.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		// --ignore-eos: the golden continuations go on past end-of-sequence
		// tokens (tiny-qwen2-f32's starts with one).
		out, errOut, code := runCLI(t, "run", "--model", golden.ModelDir(name), "--prompt-ids", joinIDs(g.Prompt.IDs),
			"--temp", "0", "--max-tokens", "24", "--ignore-eos", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		var ids []int32
		var stats statsLine
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var tl tokenLine
			if strings.HasPrefix(line, `{"stats"`) {
				json.Unmarshal([]byte(line), &stats)
				continue
			}
			if err := json.Unmarshal([]byte(line), &tl); err != nil {
				t.Fatalf("%s: bad line %q: %v", name, line, err)
			}
			if tl.ID >= 0 { // -1: the text of a character the reply's end cut short
				ids = append(ids, tl.ID)
			}
		}
		if !slices.Equal(ids, g.Greedy.Tokens) {
			t.Errorf("%s: ids %v\nwant %v", name, ids, g.Greedy.Tokens)
		}
		if stats.Stats.GenTokens != 24 || stats.Stats.PromptTokens != len(g.Prompt.IDs) || stats.Stats.Stop != "max_tokens" {
			t.Errorf("%s: stats %+v", name, stats.Stats)
		}
	}
}

func TestRunChatText(t *testing.T) {
	out, errOut, code := runCLI(t, "run", "--model", golden.ModelDir("tiny-f32"), "--chat", "--system", "You are a helpful assistant.",
		"--prompt", "What is the capital of France?", "--temp", "0", "--max-tokens", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.TrimSpace(out) == "" || !strings.Contains(errOut, "prompt 89 tokens") {
		t.Errorf("stdout %q, stderr %q: want text and the golden chat prompt's 89 tokens", out, errOut)
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		reason string
		args   []string
		want   string
	}{
		{"a prompt is required", []string{"run", "--model", golden.ModelDir("tiny-f32")}, "exactly one of --prompt"},
		{"a missing model folder is named", []string{"run", "--model", "/nonexistent", "--prompt", "x"}, `model "/nonexistent": no such folder`},
		{"ids outside the vocabulary are refused", []string{"run", "--model", golden.ModelDir("tiny-f32"), "--prompt-ids", "1,99999"}, `"99999" is not a token id`},
		{"sampling values are range-checked", []string{"run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "x", "--top-p", "2"}, "top_p 2"},
		{"a negative context is refused, not taken as the model's", []string{"run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "x", "--context", "-5"}, "--context -5: must be 0"},
		{"threads are bounded by the CPU count", []string{"run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "x", "--threads", "100000"}, "--threads 100000: must be 0 (one per physical core) to"},
		{"unknown commands are named", []string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, c := range cases {
		_, errOut, code := runCLI(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", c.reason, code, errOut, c.want)
		}
	}
}

func TestBenchRuns(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "--model", golden.ModelDir("tiny-mlx-q4"), "--prompt-tokens", "16", "--gen-tokens", "4", "--runs", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.PrefillTPS <= 0 || r.DecodeTPS <= 0 || r.PromptTokens != 16 {
		t.Errorf("bench result %+v", r)
	}
	// The timed runs come after the prefetch distance was measured.
	if r.PrefetchSource == cpu.AheadMeasuring || r.PrefetchSource == "" || r.PrefetchAhead <= 0 {
		t.Errorf("prefetch %d (%q) in the result, want a settled distance", r.PrefetchAhead, r.PrefetchSource)
	}
	t.Setenv(cpu.PrefetchEnv, "3072")
	out, errOut, code = runCLI(t, "bench", "--model", golden.ModelDir("tiny-mlx-q4"), "--prompt-tokens", "4", "--gen-tokens", "2", "--runs", "1", "--json")
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.PrefetchAhead != 3072 || r.PrefetchSource != cpu.AheadEnv {
		t.Errorf("%s=3072: exit %d (%s), prefetch %d (%q)", cpu.PrefetchEnv, code, errOut, r.PrefetchAhead, r.PrefetchSource)
	}
	t.Setenv(cpu.PrefetchEnv, "")
	// The activations in use are reported, DRIFTWOOD_ACTIVATIONS's included.
	for _, env := range []string{"", cpu.ActivationsInt8x2} {
		t.Setenv("DRIFTWOOD_ACTIVATIONS", env)
		want, err := cpu.DefaultActivations()
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, "bench", "--model", golden.ModelDir("tiny-mlx-q4"), "--prompt-tokens", "4", "--gen-tokens", "2", "--runs", "1", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Activations != want {
			t.Errorf("DRIFTWOOD_ACTIVATIONS=%q: activations %q (%v), want %q", env, r.Activations, err, want)
		}
	}
}

// TestBenchShortContext: bench measures the prefetch distance before its
// runs on a model whose context is shorter than the measurement's steps.
func TestBenchShortContext(t *testing.T) {
	dir := t.TempDir()
	src := golden.ModelDir("tiny-mlx-q4")
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "config.json" {
			data = regexp.MustCompile(`"max_position_embeddings": *[0-9]+`).ReplaceAll(data, []byte(`"max_position_embeddings": 16`))
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // nothing measured yet
	out, errOut, code := runCLI(t, "bench", "--model", dir, "--prompt-tokens", "4", "--gen-tokens", "4", "--runs", "1", "--json")
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.PrefetchSource == cpu.AheadMeasuring {
		t.Fatalf("exit %d (%s), prefetch %d (%q)", code, errOut, r.PrefetchAhead, r.PrefetchSource)
	}
}

// TestBenchTTFT: --ttft times new chats with and without the prefix
// cache, and the warm chat's own part, after the model was open, is
// within its whole.
func TestBenchTTFT(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "--model", golden.ModelDir("tiny-f32"), "--ttft", "hello", "--runs", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	tt := r.TTFT
	if tt == nil || tt.PrefixTokens <= 0 || tt.WarmSeconds <= 0 || tt.WarmChatSeconds <= 0 || tt.WarmChatSeconds > tt.WarmSeconds {
		t.Errorf("ttft result %+v", tt)
	}
}

func TestGenModelWritesALoadableModel(t *testing.T) {
	// The 1B shape is too large for a unit test; gen-model's writer is
	// tested in internal/synthmodel. Here: flag errors.
	_, errOut, code := runCLI(t, "dev", "gen-model", "--shape", "nope", "--out", t.TempDir())
	if code == 0 || !strings.Contains(errOut, `--shape "nope"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestRunSession(t *testing.T) {
	dir := t.TempDir()
	model := golden.ModelDir("tiny-f32")
	_, errOut, code := runCLI(t, "run", "--model", model, "--session", "s1", "--sessions-dir", dir, "--prompt", "Hello", "--max-tokens", "4", "--temp", "0")
	if code != 0 || !strings.Contains(errOut, "saved session s1") {
		t.Fatalf("new session: exit %d, %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "run", "--model", model, "--continue", "--sessions-dir", dir, "--prompt", "More", "--max-tokens", "4", "--temp", "0")
	if code != 0 || !strings.Contains(errOut, "restored ") || !strings.Contains(errOut, "saved session s1") {
		t.Fatalf("continue: exit %d, %s", code, errOut)
	}
	out, _, code := runCLI(t, "sessions", "--sessions-dir", dir)
	if code != 0 || !strings.Contains(out, "s1") || !strings.Contains(out, "tiny-f32") {
		t.Errorf("sessions list: %q", out)
	}
	out, _, _ = runCLI(t, "sessions", "show", "s1", "--sessions-dir", dir)
	if !strings.Contains(out, "[user]\nHello") || !strings.Contains(out, "[user]\nMore") {
		t.Errorf("sessions show: %q", out)
	}
	if _, errOut, code := runCLI(t, "run", "--model", model, "--session", "../x", "--sessions-dir", dir, "--prompt", "x"); code == 0 || !strings.Contains(errOut, "session name") {
		t.Errorf("a bad session name: exit %d, %s", code, errOut)
	}
	if _, _, code := runCLI(t, "sessions", "rm", "s1", "--sessions-dir", dir); code != 0 {
		t.Error("rm failed")
	}
}

func TestBenchRestore(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "--model", golden.ModelDir("tiny-f32"), "--restore-tokens", "24,100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Restore) != 2 || r.Restore[1].Tokens != 100 || r.Restore[1].RestoreMillis <= 0 || r.Restore[1].SizeBytes < int64(100*r.KVBytesPerToken) || r.KVType != "f16" {
		t.Errorf("restore results %+v", r.Restore)
	}
}

// floatKernels runs the rest of t on the CPU's float kernels (the
// backends it opens read DRIFTWOOD_KERNELS): the golden
// continuations are the float reference's, which int8 activations follow
// only up to near-ties (engine/cpu holds them to that).
func floatKernels(t *testing.T) { t.Setenv("DRIFTWOOD_KERNELS", "float") }

// TestPromptSpecialTokens checks that a text prompt gets the special
// tokens of the tokenizer's post-processor: Llama 3's BOS, and nothing for
// Qwen3, whose config.json names a bos_token_id that it does not use.
func TestPromptSpecialTokens(t *testing.T) {
	bos := int32(151643)
	for _, tc := range []struct {
		tokenizer string
		first     int32
	}{
		{"../../testdata/llama3-tokenizer/tokenizer.json.gz", 128000},
		{"../../testdata/qwen3-tokenizer/tokenizer.json.gz", 14990}, // "hello"
	} {
		tok, err := tokenizer.Load(tc.tokenizer)
		if err != nil {
			t.Fatal(err)
		}
		l := &chatopen.Loaded{Tok: tok, Weights: &engine.Model{Config: &engine.Config{BOSTokenID: &bos, VocabSize: 200000}}}
		ids, err := promptTokens(l, "hello", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) == 0 || ids[0] != tc.first {
			t.Errorf("%s: prompt ids %v, want them to start with %d", tc.tokenizer, ids, tc.first)
		}
	}
}

// TestRunFreshSeed: two runs of the same prompt at temperature 1 draw
// their own seeds and replies, and --seed with the printed seed gives the
// reply again.
func TestRunFreshSeed(t *testing.T) {
	run := func(extra ...string) ([]int32, uint64) {
		args := append([]string{"run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "tell me",
			"--temp", "1", "--top-p", "1", "--max-tokens", "16", "--json"}, extra...)
		out, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var ids []int32
		var stats statsLine
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(line, `{"stats"`) {
				json.Unmarshal([]byte(line), &stats)
				continue
			}
			var tl tokenLine
			json.Unmarshal([]byte(line), &tl)
			ids = append(ids, tl.ID)
		}
		return ids, stats.Stats.Seed
	}
	a, seedA := run()
	b, seedB := run()
	if seedA == 0 || seedA == seedB || slices.Equal(a, b) {
		t.Fatalf("two runs: seeds %d and %d, replies %v and %v", seedA, seedB, a, b)
	}
	again, seed := run("--seed", fmt.Sprint(seedA))
	if seed != seedA || !slices.Equal(again, a) {
		t.Errorf("--seed %d: seed %d, reply %v; the first run's %v", seedA, seed, again, a)
	}
}

// TestRunChatPrefixCache: a second `run --chat` with the same system
// prompt starts from the cached system prompt and headers (fewer prompt
// tokens processed) and prints the same greedy reply; the config key
// turns the cache off.
func TestRunChatPrefixCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	model := golden.ModelDir("tiny-f32")
	run := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"run", "--model", model, "--chat", "--system", "Be brief.", "--prompt", "Name a river.", "--max-tokens", "8", "--temp", "0", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.Join(lines[:len(lines)-1], "\n"), statsPromptTokens(t, out)
	}
	cold, coldN := run()
	warm, warmN := run()
	if warm != cold || warmN >= coldN || coldN-warmN < 8 {
		t.Errorf("warm: %d prompt tokens, cold: %d; the same reply: %v", warmN, coldN, warm == cold)
	}
	off := filepath.Join(t.TempDir(), "off.toml")
	os.WriteFile(off, []byte("no_prefix_cache = true\n"), 0o644)
	if reply, n := run("--config", off); n != coldN || reply != cold {
		t.Errorf("with no_prefix_cache: %d prompt tokens, want %d", n, coldN)
	}
}

// statsPromptTokens reads the prompt tokens from the stats line of run
// --json.
func statsPromptTokens(t *testing.T, out string) int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var st struct {
		Stats struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &st); err != nil {
		t.Fatalf("the stats line %q: %v", lines[len(lines)-1], err)
	}
	return st.Stats.PromptTokens
}
