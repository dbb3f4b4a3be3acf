package controllers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadArg: @FILE is the file's contents, @@ a leading @, anything else
// itself; a missing file is named, with how to write a leading @.
func TestReadArg(t *testing.T) {
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(`{"type":"boolean"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"@@x": "@x", "plain": "plain", "": "", "@" + file: `{"type":"boolean"}`, "a@b": "a@b"} {
		if got, err := ReadArg(in); got != want || err != nil {
			t.Errorf("ReadArg(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ReadArg("@" + file + ".missing"); err == nil || !strings.Contains(err.Error(), file+".missing") || !strings.Contains(err.Error(), "@@") {
		t.Errorf("a missing file: %v", err)
	}
}
