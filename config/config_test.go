package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestLoadMissingFileGivesDefaults(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if c != Default() {
		t.Errorf("got %+v, want defaults", c)
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte("model = \"mlx-community/x\"\nthreads = 2\n\n[sampling]\ntemperature = 0.2\ntop_k = 40\nseed = 7\n"), 0o644)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Model, want.Threads = "mlx-community/x", 2
	want.Sampling.Temperature, want.Sampling.TopK, want.Sampling.Seed = 0.2, 40, 7
	if c != want {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
}

func TestBadFiles(t *testing.T) {
	cases := []struct {
		reason, text, want string
	}{
		{"a typo in a key must not fall back to the default silently", "model = \"x\"\ntemperatur = 1\n", `:2: unknown key "temperatur"`},
		{"unknown keys inside a table name the table", "[sampling]\ntopk = 1\n", `:2: unknown key "sampling.topk"`},
		{"a wrong type names the line and key", "threads = \"two\"\n", `:1: key "threads"`},
		{"broken syntax names the line", "model = \n", ":1:"},
		{"values are range-checked", "[sampling]\ntop_p = 1.5\n", "top_p 1.5"},
		{"negative threads are refused", "threads = -1\n", "threads -1"},
		{"mlx_sampling is device, host or empty", "mlx_sampling = \"gpu\"\n", `mlx_sampling "gpu": want device, host`},
		{"threads are bounded by the CPU count (100000 was accepted, and slow)", "threads = 100000\n", "threads 100000: must be 0 (one per physical core) to"},
		{"a negative context is refused", "context = -5\n", "context -5: must be 0"},
		{"a context longer than any model is refused", "context = 4611686018427387904\n", "context 4611686018427387904: must be 0"},
		{"a dotted unknown key names the table", "sampling.topk = 1\n", `:1: unknown key "sampling.topk"`},
		{"an unknown table is refused at its header", "model = \"x\"\n\n[smapling]\ntop_k = 1\n", `:3: unknown key "smapling"`},
		{"unknown keys of an inline table are named", "sampling = { top_k = 1, tpo_p = 0.5 }\n", `:1: unknown key "sampling.tpo_p"`},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "config.toml")
		os.WriteFile(path, []byte(c.text), 0o644)
		_, err := Load(path)
		if err == nil || !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %s…%s", c.reason, err, path, c.want)
		}
	}
}

func TestManyUnknownKeysAreRefusedQuickly(t *testing.T) {
	// 20,000 unknown keys (~200 KB) took 26 s, 10,000 about 7 s: the
	// strict decoder described every one, each time scanning the document
	// for its line. Parsing now stops at the first unknown key, which is
	// what keeps the work linear: so the rest of the document, a broken
	// line at its end included, is never looked at.
	var b strings.Builder
	b.WriteString("model = \"x\"\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "k%d = 1\n", i)
	}
	b.WriteString("[[[ not toml\n")
	c := Default()
	if err := Parse([]byte(b.String()), &c); err == nil || err.Error() != `2: unknown key "k0"` {
		t.Errorf("err = %v, want the first unknown key with its line, before anything after it", err)
	}
}

func TestOversizedFileIsRefusedBeforeReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 20) // sparse: no disk used
	f.Close()
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+" is larger than 1 MiB") {
		t.Errorf("err = %v, want the size limit named with the path", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("model = \"x\"\n[sampling]\ntemperature = 0.5\n"))
	f.Add([]byte("threads = 3"))
	f.Add([]byte("[sampling]\ntop_k = 1\nx = 2\n"))
	f.Add([]byte("sampling = { seed = 1, a.b = 2 }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if firstUnknownKey(data, reflect.TypeFor[Config]()) == nil {
			d := toml.NewDecoder(bytes.NewReader(data))
			d.DisallowUnknownFields()
			c := Default()
			var strict *toml.StrictMissingError
			if err := d.Decode(&c); errors.As(err, &strict) {
				t.Fatalf("the key scan missed the unknown key the decoder found: %v", strict.Errors[0].Key())
			}
		}
		c := Default()
		if err := Parse(data, &c); err == nil {
			if err := c.Sampling.Validate(); err != nil {
				t.Fatalf("accepted invalid sampling: %v", err)
			}
		}
	})
}

func TestPathHonoursXDG(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x")
	if got := Path(); got != "/x/driftwood/config.toml" {
		t.Errorf("Path() = %q", got)
	}
}

func TestRememberModel(t *testing.T) {
	dir := t.TempDir()
	// A missing file, in a missing folder, is created.
	path := filepath.Join(dir, "new", "config.toml")
	if wrote, err := RememberModel(path, `org/a "quoted" \ model`); err != nil || !wrote {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	if c, err := Load(path); err != nil || c.Model != `org/a "quoted" \ model` {
		t.Fatalf("read back %q, %v", c.Model, err)
	}
	// An existing file without a model keeps its comments and tables.
	path = filepath.Join(dir, "config.toml")
	rest := "# my settings\nthreads = 2\n\n[sampling]\ntemperature = 0.5\n"
	os.WriteFile(path, []byte(rest), 0o644)
	if wrote, err := RememberModel(path, "org/b"); err != nil || !wrote {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(data), rest) || !strings.HasPrefix(string(data), "model = ") {
		t.Errorf("file became %q", data)
	}
	if c, err := Load(path); err != nil || c.Model != "org/b" || c.Threads != 2 || c.Sampling.Temperature != 0.5 {
		t.Errorf("read back %+v, %v", c, err)
	}
	// A linked file (dotfiles) is written through the link, keeping its
	// mode.
	target := filepath.Join(dir, "dotfiles.toml")
	os.WriteFile(target, []byte("threads = 1\n"), 0o600)
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if wrote, err := RememberModel(link, "org/l"); err != nil || !wrote {
		t.Fatalf("through a link: %v, %v", wrote, err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if info, err := os.Stat(target); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("target mode %v, %v; want 0600", info.Mode(), err)
	}
	if c, err := Load(link); err != nil || c.Model != "org/l" || c.Threads != 1 {
		t.Errorf("through the link read %+v, %v", c, err)
	}
	// A configured model is never replaced.
	if wrote, err := RememberModel(path, "org/c"); err != nil || wrote {
		t.Errorf("replaced a configured model: %v, %v", wrote, err)
	}
	// A broken file is left alone, with the error naming it.
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("temperatur = 1\n"), 0o644)
	if _, err := RememberModel(bad, "org/d"); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("broken file: %v", err)
	}
	if data, _ := os.ReadFile(bad); string(data) != "temperatur = 1\n" {
		t.Errorf("broken file changed to %q", data)
	}
}
