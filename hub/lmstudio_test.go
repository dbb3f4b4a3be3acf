package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLMStudio lays out LM Studio's models folder: publisher/repo/FILE.
func fakeLMStudio(t *testing.T, files map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	for name, b := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestResolveLMStudio(t *testing.T) {
	tiny := testGGUF(t, "tiny-mixed.gguf")
	root := fakeLMStudio(t, map[string][]byte{
		"lmstudio-community/Tiny-GGUF/Tiny-Q4_K_M.gguf":       tiny,
		"lmstudio-community/Tiny-GGUF/mmproj-Tiny-F16.gguf":   headerGGUF(t, "clip", 1),
		"lmstudio-community/Tiny-GGUF/README.md":              []byte("#"),
		"bartowski/Two-GGUF/Two-Q4_K_M.gguf":                  tiny,
		"bartowski/Two-GGUF/Two-Q8_0.gguf":                    tiny,
		"bartowski/Split-GGUF/Split-Q8_0-00001-of-00002.gguf": tiny,
		"bartowski/Split-GGUF/Split-Q8_0-00002-of-00002.gguf": tiny,
		"bartowski/Empty/notes.txt":                           []byte("x"),
		"bartowski/Fake-GGUF/Fake-Q4_K_M.gguf":                []byte("not GGUF"),
	})
	// An imported file that LM Studio linked rather than copied.
	linked := filepath.Join(t.TempDir(), "Mine-Q4_0.gguf")
	os.WriteFile(linked, tiny, 0o644)
	os.MkdirAll(filepath.Join(root, "me", "Mine"), 0o755)
	os.Symlink(linked, filepath.Join(root, "me", "Mine", "Mine-Q4_0.gguf"))
	opt := Options{LMStudioDir: root}

	for name, want := range map[string]string{
		"lmstudio:lmstudio-community/Tiny-GGUF":                  "lmstudio-community/Tiny-GGUF/Tiny-Q4_K_M.gguf",
		"lmstudio:lmstudio-community/Tiny-GGUF/Tiny-Q4_K_M.gguf": "lmstudio-community/Tiny-GGUF/Tiny-Q4_K_M.gguf",
		"lmstudio:bartowski/Two-GGUF/Two-Q8_0.gguf":              "bartowski/Two-GGUF/Two-Q8_0.gguf",
		"lmstudio:me/Mine": "me/Mine/Mine-Q4_0.gguf",
	} {
		if got, err := Resolve(name, opt); err != nil || got != filepath.Join(root, filepath.FromSlash(want)) {
			t.Errorf("Resolve(%s) = %q, %v; want %s", name, got, err, want)
		}
	}
	for _, tc := range []struct {
		name, want, reason string
	}{
		{"lmstudio:bartowski/Two-GGUF", "holds 2 models; name one: lmstudio:bartowski/Two-GGUF/Two-Q4_K_M.gguf, lmstudio:bartowski/Two-GGUF/Two-Q8_0.gguf", "two models in a folder are listed by the names that pick one"},
		{"lmstudio:bartowski/Split-GGUF", "Split-Q8_0-00001-of-00002.gguf is split into 2 files", "a split model is refused"},
		{"lmstudio:bartowski/Split-GGUF/Split-Q8_0-00001-of-00002.gguf", "a part of a split GGUF file", "so is a part named by file"},
		{"lmstudio:bartowski/Empty", "holds no .gguf file", "a folder without GGUF"},
		{"lmstudio:bartowski/Absent", "no folder " + filepath.Join(root, "bartowski", "Absent"), "a missing folder is named"},
		{"lmstudio:bartowski/Two-GGUF/Absent.gguf", "no file " + filepath.Join(root, "bartowski", "Two-GGUF", "Absent.gguf"), "a missing file is named"},
		{"lmstudio:bartowski/Fake-GGUF/Fake-Q4_K_M.gguf", "is not a GGUF file", "a file that is not GGUF"},
		{"lmstudio:../../etc", "not an LM Studio name", "a name climbing out of the folder"},
		{"lmstudio:bartowski/../../x.gguf", "not an LM Studio name", "a '..' anywhere"},
		{"lmstudio:bartowski", "publisher/repo or publisher/repo/FILE.gguf", "a publisher alone"},
		{"lmstudio:a/b/c/d.gguf", "publisher/repo or publisher/repo/FILE.gguf", "too deep"},
	} {
		if _, err := Resolve(tc.name, opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Resolve(%s) = %v, want it to say %q", tc.reason, tc.name, err, tc.want)
		}
	}
}
