package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// TestRunThink: --think=false closes Qwen3's prompt with an empty think
// block and --think renders as the template's default; the flag is
// refused where it would change nothing.
func TestRunThink(t *testing.T) {
	model := golden.ChatMLModel(t, golden.IMEnd)
	tok, err := tokenizer.Load(filepath.Join(model, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	empty := len(tok.Encode("<think>\n\n</think>\n\n"))
	prompt := func(extra ...string) int {
		t.Helper()
		_, st := runStats(t, append([]string{"--model", model, "--chat", "--prompt", "Hi", "--max-tokens", "1", "--temp", "0"}, extra...)...)
		return st.Stats.PromptTokens
	}
	unset := prompt()
	if off := prompt("--think=false"); off != unset+empty {
		t.Errorf("--think=false: a prompt of %d tokens, want %d + %d (the empty think block)", off, unset, empty)
	}
	if on := prompt("--think"); on != unset {
		t.Errorf("--think: a prompt of %d tokens, want %d (Qwen3 thinks by default)", on, unset)
	}
	for _, c := range []struct {
		reason string
		args   []string
		want   string
	}{
		{"a template without enable_thinking", []string{"--model", golden.ModelDir("tiny-f32"), "--chat", "--think"}, "has no thinking switch (enable_thinking)"},
		{"a prompt outside the chat template", []string{"--model", model, "--think=false"}, "--think needs --chat or a session"},
	} {
		_, errOut, code := runCLI(t, append([]string{"run", "--prompt", "Hi", "--max-tokens", "1"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q; want an error saying %q", c.reason, code, errOut, c.want)
		}
	}
}

// TestRunSessionThink: a session keeps --think=false for its next turns.
func TestRunSessionThink(t *testing.T) {
	model, dir := golden.ChatMLModel(t, golden.IMEnd), t.TempDir()
	for _, turn := range [][]string{{"--prompt", "Hi", "--think=false"}, {"--prompt", "More"}} {
		if _, errOut, code := runCLI(t, append([]string{"run", "--model", model, "--session", "s", "--sessions-dir", dir, "--max-tokens", "2", "--temp", "0"}, turn...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", turn, code, errOut)
		}
	}
	if out, _, _ := runCLI(t, "sessions", "show", "s", "--sessions-dir", dir); !strings.Contains(out, "\nthinking off\n") {
		t.Errorf("sessions show does not say the thinking is off:\n%s", out)
	}
	path, _ := sessions.Store{Dir: dir}.Path("s")
	meta, err := sessions.ReadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta.EnableThinking == nil || *meta.EnableThinking {
		t.Errorf("the session's thinking switch is %v, want off", meta.EnableThinking)
	}
	tok, err := tokenizer.Load(filepath.Join(model, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if held := tok.Decode(meta.Tokens); !strings.Contains(held, "More<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Errorf("the second turn was not asked to skip thinking:\n%q", held)
	}
}
