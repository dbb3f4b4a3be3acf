package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// mlxlmFixture is the path of one of the prompt caches mlx-lm saved for
// the sessions package's tests (sessions/testdata/mlxlm_fixtures.py),
// and the model that made it; the test skips when either is absent.
func mlxlmFixture(t *testing.T, file, model string) (string, string) {
	t.Helper()
	path := filepath.Join("..", "..", "sessions", "testdata", file+".safetensors")
	dir := golden.ModelDir(model)
	for _, p := range []string{path, filepath.Join(dir, "model.safetensors")} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%v: the fixture or its model is not in this checkout", err)
		}
	}
	return path, dir
}

// fixtureIDs are the tokens the mlx-lm fixtures hold: "The tide is out"
// after the BOS (mlxlm_fixtures.py).
var fixtureIDs = []int32{500, 367, 256, 305, 68, 286, 220, 264, 83}

// TestSessionsImport imports mlx-lm's prompt caches (f16, its 4-bit
// quantised cache, the older layout) as sessions: the tokens come back,
// the state is kept as mlx-lm stored it, and `run --session` continues
// it, processing only the new message.
func TestSessionsImport(t *testing.T) {
	for _, c := range []struct{ file, model string }{
		{"mlxlm-new-f16", "tiny-f16"}, {"mlxlm-new-q4", "tiny-hd32-f32"}, {"mlxlm-old-f32", "tiny-f32"},
	} {
		file, model := mlxlmFixture(t, c.file, c.model)
		dir := t.TempDir()
		out, errOut, code := runCLI(t, "sessions", "import", file, "--model", model, "--name", "tide", "--sessions-dir", dir,
			"--config", filepath.Join(dir, "none.toml"), "--threads", "1")
		if code != 0 || !strings.Contains(out, "imported "+file+" as session tide") || !strings.Contains(out, "9 tokens read back") ||
			!strings.Contains(out, `"<|begin_of_text|>The tide is out"`) {
			t.Fatalf("%s: exit %d\n%s%s", c.file, code, out, errOut)
		}
		pc, err := sessions.OpenPromptCache(file)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := sessions.Store{Dir: dir}.Open("tide")
		if err != nil {
			t.Fatal(err)
		}
		m := snap.Meta
		if !slices.Equal(m.Tokens, fixtureIDs) || m.Imported != len(fixtureIDs) || len(m.Messages) != 1 || m.Messages[0].Content != "<|begin_of_text|>The tide is out" ||
			m.ModelSource == nil || !strings.HasSuffix(m.ModelSource.Path, c.model) {
			t.Errorf("%s: session %+v", c.file, m)
		}
		if snap.KV.DType != pc.KV.DType || (snap.KV.Quant == nil) != (pc.KV.Quant == nil) || !slices.Equal(snap.KV.V[1], pc.KV.V[1]) {
			t.Errorf("%s: the state is not kept as mlx-lm stored it", c.file)
		}
		snap.Close()
		pc.Close()

		// The session names its model: run opens it.
		out, errOut, code = runCLI(t, "run", "--session", "tide", "--sessions-dir", dir, "--prompt", "and the boats", "--max-tokens", "3", "--temp", "0", "--json")
		if code != 0 || !strings.Contains(errOut, "restored 9 tokens") {
			t.Fatalf("%s: run: exit %d\n%s", c.file, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var stats statsLine
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &stats); err != nil {
			t.Fatal(err)
		}
		snap, err = sessions.Store{Dir: dir}.Open("tide")
		if err != nil {
			t.Fatal(err)
		}
		if held := len(snap.Meta.Tokens) - 2; !slices.Equal(snap.Meta.Tokens[:9], fixtureIDs) || stats.Stats.PromptTokens != held-9 || len(snap.Meta.Messages) != 3 {
			t.Errorf("%s: run processed %d prompt tokens, the session then held %d (%d messages), beginning %v", c.file, stats.Stats.PromptTokens, held+2, len(snap.Meta.Messages), snap.Meta.Tokens[:9])
		}
		snap.Close()
	}
}

// TestSessionsImportRefuses: a cache on another model's weights, a name
// taken, a Driftwood session, import's flags on another verb.
func TestSessionsImportRefuses(t *testing.T) {
	file, model := mlxlmFixture(t, "mlxlm-old-f32", "tiny-f32")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "none.toml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "import", file, "--model", golden.ModelDir("tiny-untied-f32"), "--name", "other"}, "the cache was not made with this model"},
		{[]string{"sessions", "import", file, "--model", model, "--name", "tide"}, ""},
		{[]string{"sessions", "import", file, "--model", model, "--name", "tide"}, `session "tide" exists already`},
		{[]string{"sessions", "import", filepath.Join(dir, "tide.safetensors"), "--name", "again"}, "is a Driftwood session already"},
		{[]string{"sessions", "import", file, "--model", model, "--name", "../x"}, "give the session a name with --name"},
		{[]string{"sessions", "show", "tide", "--model", model}, "import's flags"},
	} {
		_, errOut, code := runCLI(t, append(c.args, "--sessions-dir", dir, "--config", cfg)...)
		if c.want == "" && code != 0 || c.want != "" && (code == 0 || !strings.Contains(errOut, c.want)) {
			t.Errorf("%s: exit %d: %s", strings.Join(c.args, " "), code, errOut)
		}
	}
	// `sessions show` says what was imported; a prompt cache in the
	// sessions folder is refused, pointing to the import.
	out, _, _ := runCLI(t, "sessions", "show", "tide", "--sessions-dir", dir)
	if !strings.Contains(out, "imported 9 tokens") {
		t.Errorf("sessions show: %s", out)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "foreign.safetensors"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "run", "--session", "foreign", "--sessions-dir", dir, "--model", model, "--prompt", "x")
	if code == 0 || !strings.Contains(errOut, "driftwood sessions import "+filepath.Join(dir, "foreign.safetensors")) {
		t.Errorf("a prompt cache as a session: exit %d: %s", code, errOut)
	}
}
