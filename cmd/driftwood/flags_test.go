package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestFolderFlagNames: every sub-command names the sessions folder
// --sessions-dir and the controllers folder --controllers-dir; the
// --dir that sessions and controllers had is an alias, and their help
// says so.
func TestFolderFlagNames(t *testing.T) {
	sessionsDir, controllersDir := t.TempDir(), t.TempDir()
	if _, errOut, code := runCLI(t, "run", "--model", golden.ModelDir("tiny-f32"), "--session", "s1", "--sessions-dir", sessionsDir, "--prompt", "Hi", "--max-tokens", "1"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(controllersDir, "mine.wat"), []byte("(module)"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "--sessions-dir", sessionsDir}, "s1"},
		{[]string{"sessions", "--dir", sessionsDir}, "s1"},
		{[]string{"sessions", "show", "s1", "--dir", sessionsDir}, "[user]\nHi"},
		{[]string{"controllers", "--controllers-dir", controllersDir}, "mine"},
		{[]string{"controllers", "--dir", controllersDir}, "mine"},
	} {
		if out, errOut, code := runCLI(t, c.args...); code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%q: exit %d, %q (%s); want %q in it", c.args, code, out, errOut, c.want)
		}
	}
	for _, c := range []struct{ cmd, name string }{{"sessions", "sessions-dir"}, {"controllers", "controllers-dir"}} {
		out, _, _ := runCLI(t, c.cmd, "-h")
		if !strings.Contains(out, "-"+c.name+" string") || !strings.Contains(out, "the same as --"+c.name) {
			t.Errorf("%s -h does not give --%s with --dir as its alias:\n%s", c.cmd, c.name, out)
		}
	}
}

// TestHelpOnStdout: help asked for is the output (so that `driftwood
// --help | less` shows it); a wrong flag still goes to stderr.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}, {"run", "-h"}, {"sessions", "--help"}, {"pull", "-h"}, {"doctor", "-h"}, {"dev", "-h"}, {"dev", "gen-model", "-h"}, {"bench", "-h"}, {"tokenize", "-h"}, {"controllers", "-h"}, {"chat", "-h"}} {
		out, errOut, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "usage: driftwood") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q", args, code, len(out), errOut)
		}
	}
	out, errOut, code := runCLI(t, "run", "--bogus")
	if code == 0 || out != "" || !strings.Contains(errOut, "flag provided but not defined: -bogus") {
		t.Errorf("a wrong flag: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
