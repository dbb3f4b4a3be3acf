package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// freshMachine gives the test a home with nothing in it (no controllers
// folder, no compile cache) and runs it from a folder that is not the
// repository; it returns the controllers folder, which does not exist.
func freshMachine(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Chdir(t.TempDir())
	return filepath.Join(home, "data", "driftwood", "controllers")
}

// runStats runs `run --json` and returns the reply's text and its stats.
func runStats(t *testing.T, args ...string) (string, statsLine) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"run", "--model", golden.ModelDir("tiny-f32"), "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var text strings.Builder
	var st statsLine
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, `{"stats"`) {
			json.Unmarshal([]byte(line), &st)
			continue
		}
		var tl tokenLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		text.WriteString(tl.Text)
	}
	if strings.Contains(errOut, "[controller") {
		t.Errorf("controller messages: %s", errOut)
	}
	return text.String(), st
}

// TestShippedControllersAtFirstUse is the out-of-the-box promise: with
// nothing built or installed and from any folder, `run --controller`
// finds the shipped controllers and they constrain the reply.
func TestShippedControllersAtFirstUse(t *testing.T) {
	dir := freshMachine(t)
	text, st := runStats(t, "--prompt", "Hello", "--controller", "regex", "--controller-arg", "[a-z]{3} [a-z]{2}", "--temp", "1", "--max-tokens", "32")
	if !regexp.MustCompile(`^[a-z]{3} [a-z]{2}$`).MatchString(text) || st.Stats.Stop != "controller" {
		t.Errorf("regex: reply %q, stop %q: want a match of [a-z]{3} [a-z]{2} ended by the controller", text, st.Stats.Stop)
	}
	text, st = runStats(t, "--chat", "--prompt", "Answer in JSON", "--controller", "json", "--controller-arg", `{"type":"boolean"}`, "--max-tokens", "16")
	if (text != "true" && text != "false") || st.Stats.Stop != "controller" {
		t.Errorf("json: reply %q, stop %q", text, st.Stats.Stop)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the controllers folder was made (%v): nothing needs to be on disk", err)
	}
}

// TestControllerFileOverridesShipped: a file in the controllers folder
// with a shipped name is the one run, and `driftwood controllers` says so.
func TestControllerFileOverridesShipped(t *testing.T) {
	dir := freshMachine(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	minimal, err := os.ReadFile(filepath.Join(golden.Dir(), "..", "..", "controllers", "examples", "wat", "minimal.wat"))
	if err != nil {
		t.Fatal(err)
	}
	override := filepath.Join(dir, "regex.wat")
	if err := os.WriteFile(override, minimal, 0o644); err != nil {
		t.Fatal(err)
	}
	// minimal.wat stops every reply after 8 tokens and constrains nothing.
	_, st := runStats(t, "--prompt", "Hello", "--controller", "regex", "--controller-arg", "[a-z]", "--max-tokens", "32", "--ignore-eos")
	if st.Stats.GenTokens != 8 || st.Stats.Stop != "controller" {
		t.Errorf("regex with regex.wat in the folder: %d tokens, stop %q: want minimal.wat's 8", st.Stats.GenTokens, st.Stats.Stop)
	}
	out, errOut, code := runCLI(t, "controllers")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^regex +yes +` + regexp.QuoteMeta(override) + ` +\(not described\)$`),
		regexp.MustCompile(`(?m)^regex +no +shipped, overridden by the regex above +required: a Go regular expression, which the whole reply matches$`),
		regexp.MustCompile(`(?m)^json +yes +shipped +optional: empty for any JSON value, or a JSON schema`),
		regexp.MustCompile(`(?m)^maxwords +yes +shipped +required: a number: the most words the reply has$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("controllers: no line %s in\n%s", want, out)
		}
	}
}

// TestControllersBuildElsewhere: outside a clone of the repository the
// build says where it looked and that the shipped controllers need none.
func TestControllersBuildElsewhere(t *testing.T) {
	freshMachine(t)
	_, errOut, code := runCLI(t, "controllers", "build")
	if code != 1 || !strings.Contains(errOut, "no controller sources in") || !strings.Contains(errOut, "clone of the repository") || !strings.Contains(errOut, "need no build") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestControllerArgFromFile: --controller-arg @FILE reads the argument
// from FILE (a schema too large for a command line); a file that cannot
// be read is an error before any token, naming it.
func TestControllerArgFromFile(t *testing.T) {
	freshMachine(t)
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(`{"type": "boolean"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	text, st := runStats(t, "--chat", "--prompt", "Answer in JSON", "--controller", "json", "--controller-arg", "@"+file, "--max-tokens", "16")
	if (text != "true" && text != "false") || st.Stats.Stop != "controller" {
		t.Errorf("json @FILE: reply %q, stop %q", text, st.Stats.Stop)
	}
	_, errOut, code := runCLI(t, "run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "x", "--controller", "json", "--controller-arg", "@"+file+".missing")
	if code == 0 || !strings.Contains(errOut, file+".missing") || !strings.Contains(errOut, "@@") {
		t.Errorf("a missing @FILE: exit %d, %q: want an error naming it", code, errOut)
	}
}

// TestJSONFormatsWithinBudget: a string with a format (email's counted
// parts make the largest DFA) is constrained from its first character
// to the end of the reply: its states are prepared at dw_init, not in the
// step that meets the string, which took past the 50 ms step budget in
// Wasm and switched the controller off (exit 3, the rest unconstrained).
func TestJSONFormatsWithinBudget(t *testing.T) {
	freshMachine(t)
	for _, format := range []string{"email", "date-time", "uuid", "ipv4"} {
		schema := `{"type":"object","properties":{"v":{"type":"string","format":"` + format + `"}},"required":["v"]}`
		text, st := runStats(t, "--chat", "--prompt", "Answer in JSON", "--controller", "json", "--controller-arg", schema, "--max-tokens", "120", "--seed", "1")
		var v struct{ V *string }
		if err := json.Unmarshal([]byte(text), &v); st.Stats.ControllerError != "" || (err == nil) != (st.Stats.Stop == "controller") || err == nil && v.V == nil {
			t.Errorf("%s: reply %q, stop %q, controller error %q", format, text, st.Stats.Stop, st.Stats.ControllerError)
		}
	}
}
