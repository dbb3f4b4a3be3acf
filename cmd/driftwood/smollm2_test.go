package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestSmolLM2Product is the product on a trained model (SmolLM2-135M-
// Instruct, Q4_1 GGUF), the way a user meets it with `run`: it answers,
// the shipped controllers hold it to a JSON schema, a regex and a
// choice, a session is saved and continued from another folder without
// --model, and a conversation goes on past a small window. Skipped
// without the model (scripts/fetch-smollm2.sh).
func TestSmolLM2Product(t *testing.T) {
	model := golden.SmolLM2(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	chat := func(prompt string, extra ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"run", "--model", model, "--chat", "--temp", "0", "--prompt", prompt}, extra...)...)
		if code != 0 {
			t.Fatalf("run %q %q: exit %d\n%s", prompt, extra, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	// On the float kernels (the exact path). The first token is a near-tie
	// ("The" 25.33, "L" 25.24): 8-bit activations, llama.cpp's as much as
	// the int8 kernels', turn it to "L'Étoile, la Marseillaise, …", which
	// is logged; TestSmolLM2 in engine/cpu holds those kernels to
	// llama.cpp's answers.
	t.Run("float", func(t *testing.T) {
		floatKernels(t)
		t.Setenv("XDG_CACHE_HOME", t.TempDir()) // its own prefix cache
		if got := chat("What is the capital of France?", "--max-tokens", "30"); !strings.Contains(got, "Paris") {
			t.Errorf("the capital of France: %q", got)
		}
	})
	kernels, _, _ := cpu.DefaultKernels()
	t.Logf("the capital of France on the %s kernels: %q", kernels, chat("What is the capital of France?", "--max-tokens", "30"))
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	got := chat("Give the capital of France as JSON with a key city.", "--max-tokens", "40", "--controller", "json", "--controller-arg", schema)
	var v struct {
		City *string `json:"city"`
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil || v.City == nil {
		t.Errorf("json with a schema: %q (%v)", got, err)
	}
	if got := chat("How many legs does a spider have?", "--max-tokens", "5", "--controller", "regex", "--controller-arg", "[0-9]+"); !regexp.MustCompile(`^[0-9]+$`).MatchString(got) {
		t.Errorf("regex [0-9]+: %q", got)
	}
	if got := chat("Is Paris in France? Answer yes or no.", "--controller", "choice", "--controller-arg", `["yes","no"]`); got != "yes" && got != "no" {
		t.Errorf("choice: %q", got)
	}

	dir := t.TempDir()
	if _, errOut, code := runCLI(t, "run", "--model", model, "--session", "ada", "--sessions-dir", dir, "--prompt", "My name is Ada.", "--temp", "0", "--max-tokens", "16"); code != 0 {
		t.Fatalf("a new session: exit %d\n%s", code, errOut)
	}
	t.Chdir(t.TempDir())
	out, errOut, code := runCLI(t, "run", "--continue", "--sessions-dir", dir, "--prompt", "What is my name?", "--temp", "0", "--max-tokens", "16", "--json")
	if code != 0 || !strings.Contains(errOut, "its model") || !strings.Contains(errOut, "restored ") {
		t.Fatalf("continued without --model: exit %d\n%s", code, errOut)
	}
	if n := statsPromptTokens(t, out); n > 24 {
		t.Errorf("the continued session processed %d prompt tokens: the restore was not used", n)
	}

	// Past a small window: the oldest turns leave the model's view.
	compacted := false
	for i := 0; i < 6 && !compacted; i++ {
		_, errOut, code := runCLI(t, "run", "--model", model, "--session", "long", "--sessions-dir", dir, "--context", "160",
			"--prompt", "Tell me one more fact about the sea.", "--temp", "0", "--max-tokens", "24")
		if code != 0 {
			t.Fatalf("turn %d of a long session: exit %d\n%s", i, code, errOut)
		}
		compacted = strings.Contains(errOut, "left the model's view")
	}
	if !compacted {
		t.Error("six turns in a window of 160 tokens never made room")
	}
}
