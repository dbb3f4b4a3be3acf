package conversation

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwoodlabs/driftwood/sessions"
)

// entries lists the prefix cache's files.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	return files
}

// TestPrefixCache: the first chat keeps its system prompt and headers;
// the next with the same prompt starts from them and replies the same; a
// changed system prompt or another model misses; a corrupt entry is
// refused, reported, replaced, and the reply is unharmed.
func TestPrefixCache(t *testing.T) {
	m := load(t, "tiny-f32")
	dir := t.TempDir()
	prefixes := &sessions.Prefixes{Dir: dir, Limit: 1 << 30}
	chat := func(rt Runtime, system string) Reply {
		t.Helper()
		c, _ := New(rt, Options{Window: 512, Sampler: greedy, MaxTokens: 12, Prefixes: prefixes})
		defer c.Close()
		c.SetSystem(system)
		return send(t, c, "What is the capital of France?")
	}
	cold := chat(m, system)
	if cold.Prefix != 0 || cold.PrefixErr != nil || len(entries(t, dir)) != 1 {
		t.Fatalf("first chat: %d restored (%v), %d entries", cold.Prefix, cold.PrefixErr, len(entries(t, dir)))
	}
	warm := chat(m, system)
	if warm.Prefix < sessions.MinPrefix || warm.PrefixErr != nil || warm.Stats.PromptTokens != cold.Stats.PromptTokens-warm.Prefix {
		t.Fatalf("second chat: %d restored (%v), %d prompt tokens processed of %d", warm.Prefix, warm.PrefixErr, warm.Stats.PromptTokens, cold.Stats.PromptTokens)
	}
	if warm.Text != cold.Text {
		t.Errorf("from the prefix cache: %q, without: %q", warm.Text, cold.Text)
	}

	if r := chat(m, "Another system prompt."); r.Prefix != 0 || len(entries(t, dir)) != 2 {
		t.Errorf("a changed system prompt: %d restored, %d entries", r.Prefix, len(entries(t, dir)))
	}
	if r := chat(load(t, "tiny-bf16"), system); r.Prefix != 0 || r.PrefixErr != nil {
		t.Errorf("another model: %d restored (%v)", r.Prefix, r.PrefixErr)
	}

	// Corrupt every entry: each is refused with the reason and rewritten.
	for _, f := range entries(t, dir) {
		b, _ := os.ReadFile(f)
		b[len(b)-3] ^= 0x55
		os.WriteFile(f, b, 0o600)
	}
	bad := chat(m, system)
	if bad.Prefix != 0 || bad.PrefixErr == nil || bad.Text != cold.Text {
		t.Fatalf("a corrupt entry: %d restored, error %v, reply %q (want %q)", bad.Prefix, bad.PrefixErr, bad.Text, cold.Text)
	}
	if again := chat(m, system); again.Prefix != warm.Prefix || again.PrefixErr != nil {
		t.Errorf("after the corrupt entry was replaced: %d restored (%v)", again.Prefix, again.PrefixErr)
	}
}

// TestPrefixCacheIsBounded: past its limit, the least recently used
// entries leave.
func TestPrefixCacheIsBounded(t *testing.T) {
	m := load(t, "tiny-f32")
	dir := t.TempDir()
	prefixes := &sessions.Prefixes{Dir: dir, Limit: 1 << 30}
	chat := func(system string) Reply {
		t.Helper()
		c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 2, Prefixes: prefixes})
		defer c.Close()
		c.SetSystem(system)
		return send(t, c, "Hi")
	}
	chat("one")
	info, err := os.Stat(entries(t, dir)[0])
	if err != nil {
		t.Fatal(err)
	}
	prefixes.Limit = 2*info.Size() + info.Size()/2 // room for two
	chat("two")
	chat("one") // used again: now the most recent
	chat("three")
	if n := len(entries(t, dir)); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	if r := chat("one"); r.Prefix == 0 {
		t.Error("the most recently used entry was removed")
	}
	if r := chat("two"); r.Prefix != 0 {
		t.Error("the least recently used entry is still there")
	}
}
