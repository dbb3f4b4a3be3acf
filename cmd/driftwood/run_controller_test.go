package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// probe writes a controller in WAT named name.wat: init is dw_init's body
// and step dw_step's (a counter $steps is 1 at the first step); the data
// segments are extra. It returns the file's path.
func probe(t *testing.T, name, init, step, extra string) string {
	t.Helper()
	wat := `(module
  (import "driftwood" "log" (func $log (param i32 i32)))
  (memory (export "memory") 1)
  (global $steps (mut i32) (i32.const 0))
  (func (export "dw_abi_version") (result i32) (i32.const 3))
  (func (export "dw_alloc") (param i32) (result i32) (i32.const 8192))
  (func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))
  (func (export "dw_init") (param i32 i32) (result i32) ` + init + `)
  (func (export "dw_begin") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    ` + step + `)
  ` + extra + `
)`
	path := filepath.Join(t.TempDir(), name+".wat")
	if err := os.WriteFile(path, []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runJSON runs `run --json` on the tiny model and returns the token lines,
// the stats, stderr and the exit status.
func runJSON(t *testing.T, args ...string) (tokens []tokenLine, st statsLine, errOut string, code int) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"run", "--model", golden.ModelDir("tiny-f32"), "--json", "--prompt", "Hello"}, args...)...)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, `{"stats"`) {
			if err := json.Unmarshal([]byte(line), &st); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var tl tokenLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		tokens = append(tokens, tl)
	}
	return tokens, st, errOut, code
}

// TestRunReportsControllerFailure: when the requested controller is
// switched off during the reply, run still prints the whole reply, says
// why once (the name is not repeated on a line), reports it in the
// --json stats and exits with status 3, so that a script can tell its
// constraint did not hold. A controller that constrained the whole
// reply exits 0 with no controller_error.
func TestRunReportsControllerFailure(t *testing.T) {
	freshMachine(t)
	msg := `(data (i32.const 100) "digits: want 0 to 9")`
	for _, c := range []struct {
		reason, init, step, want string
		code                     int
	}{
		{"a trap at the third step", "(i32.const 0)", "(if (i32.eq (global.get $steps) (i32.const 3)) (then unreachable)) (i32.const 0)", "digits: dw_step trapped (unreachable", 3},
		{"no fault", "(i32.const 0)", "(i32.const 0)", "", 0},
	} {
		path := probe(t, "digits", c.init, c.step, msg)
		// Greedy: a fresh seed would end the reply at an end of turn now
		// and then, short of the 6 tokens counted on.
		tokens, st, errOut, code := runJSON(t, "--controller", path, "--controller-arg", "abc", "--max-tokens", "6", "--temp", "0")
		if code != c.code || len(tokens) != 6 || st.Stats.GenTokens != 6 {
			t.Errorf("%s: exit %d, %d tokens printed; want exit %d and the whole 6-token reply\n%s", c.reason, code, len(tokens), c.code, errOut)
		}
		if !strings.HasPrefix(st.Stats.ControllerError, c.want) || (c.want == "") != (st.Stats.ControllerError == "") {
			t.Errorf("%s: controller_error %q, want it to start with %q", c.reason, st.Stats.ControllerError, c.want)
		}
		for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
			if strings.Count(line, "digits") > 1 {
				t.Errorf("%s: %q names the controller more than once", c.reason, line)
			}
		}
		if c.code != 0 && !strings.Contains(errOut, "exit status 3") {
			t.Errorf("%s: stderr %q does not say why the exit status is 3", c.reason, errOut)
		}
	}
	// A controller that cannot go on (FAIL at its third step, after two
	// tokens) ends the reply there, unfinished: exit 3 as well.
	path := probe(t, "digits", "(i32.const 0)", "(if (i32.eq (global.get $steps) (i32.const 3)) (then (return (i32.const 1024)))) (i32.const 0)", `(data (i32.const 1024) "\20\00\00\00")`)
	tokens, st, errOut, code := runJSON(t, "--controller", path, "--max-tokens", "6", "--temp", "0")
	if code != 3 || len(tokens) != 2 || st.Stats.Stop != "controller" || !strings.HasPrefix(st.Stats.ControllerError, "digits: the reply cannot go on under its constraint") {
		t.Errorf("FAIL: exit %d, %d tokens, stop %q, controller_error %q; want 3, 2 tokens, the controller's stop and why\n%s", code, len(tokens), st.Stats.Stop, st.Stats.ControllerError, errOut)
	}
	// Without --json: the reply is printed too.
	path = probe(t, "digits", "(i32.const 0)", "(if (i32.eq (global.get $steps) (i32.const 3)) (then unreachable)) (i32.const 0)", "")
	out, _, code := runCLI(t, "run", "--model", golden.ModelDir("tiny-f32"), "--prompt-ids", "1,2,3", "--controller", path, "--max-tokens", "4", "--temp", "0")
	if code != 3 || strings.TrimSpace(out) == "" {
		t.Errorf("text: exit %d, reply %q; want 3 and the reply", code, out)
	}
	// In a session too: the turn is saved, and the status says the
	// constraint did not hold.
	out, errOut, code = runCLI(t, "run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "Hello", "--session", "s", "--sessions-dir", t.TempDir(), "--controller", path, "--max-tokens", "4", "--temp", "0")
	if code != 3 || strings.TrimSpace(out) == "" || !strings.Contains(errOut, "saved session s") {
		t.Errorf("session: exit %d, reply %q, stderr %q; want 3, the reply and the session saved", code, out, errOut)
	}
}

// TestRunRefusesAControllerUpFront: a controller that refuses its
// argument, or needs one that is not given, is an error before any
// reply (exit 1, nothing on stdout), which says why: the guest's reason,
// or what argument the controller takes.
func TestRunRefusesAControllerUpFront(t *testing.T) {
	freshMachine(t)
	refuse := probe(t, "digits", "(call $log (i32.const 100) (i32.const 19)) (i32.const 1)", "(i32.const 0)", `(data (i32.const 100) "digits: want 0 to 9")`)
	for _, c := range []struct {
		reason string
		args   []string
		want   string
	}{
		{"dw_init refuses", []string{"--controller", refuse, "--controller-arg", "abc"}, `controller digits refused its argument "abc" (dw_init returned 1): want 0 to 9`},
		{"regex without its argument", []string{"--controller", "regex"}, "controller regex needs an argument: a Go regular expression"},
		{"choice with a bad one", []string{"--controller", "choice", "--controller-arg", "yes,no"}, "(choice takes a JSON array of strings"},
	} {
		out, errOut, code := runCLI(t, append([]string{"run", "--model", golden.ModelDir("tiny-f32"), "--prompt", "Hello", "--max-tokens", "4"}, c.args...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, no reply, and %q", c.reason, code, out, errOut, c.want)
		}
	}
}

// TestRunForcedTokensWithinMaxTokens: with --max-tokens 3, a controller
// that forces five tokens gives a three-token reply, stop max_tokens.
func TestRunForcedTokensWithinMaxTokens(t *testing.T) {
	freshMachine(t)
	// FORCE (0x08), force_ptr 4096, force_len 5, at every step.
	path := probe(t, "force5", "(i32.const 0)", "(i32.const 1024)", `
  (data (i32.const 1024) "\08\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00\05\00\00\00")
  (data (i32.const 4096) "\28\00\00\00\29\00\00\00\2a\00\00\00\2b\00\00\00\2c\00\00\00")`)
	tokens, st, errOut, code := runJSON(t, "--controller", path, "--max-tokens", "3")
	if code != 0 || len(tokens) != 3 || st.Stats.GenTokens != 3 || st.Stats.Stop != "max_tokens" {
		t.Errorf("exit %d, %d tokens printed, gen_tokens %d, stop %q; want 3 tokens and max_tokens\n%s", code, len(tokens), st.Stats.GenTokens, st.Stats.Stop, errOut)
	}
	for i, tl := range tokens {
		if !tl.Forced || tl.ID != int32(40+i) {
			t.Errorf("token %d: %+v, want forced %d", i, tl, 40+i)
		}
	}
	// The first forced token overrode what the model wanted (its greedy
	// choice); the rest of the step's forced tokens had no logits of
	// their own.
	free, _, _, _ := runJSON(t, "--max-tokens", "1", "--temp", "0")
	top := free[0].ID
	if top == 40 {
		t.Fatal("the model's top token is the forced one: choose another")
	}
	if len(tokens) == 3 && (tokens[0].Wanted == nil || *tokens[0].Wanted != top || tokens[1].Wanted != nil || st.Stats.Overrides != 1) {
		t.Errorf("wanted %v, %v; %d overrides; want %d on the first token only", tokens[0].Wanted, tokens[1].Wanted, st.Stats.Overrides, top)
	}
}
