package backends

import (
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestNamesAreTheBackends checks that each entry's Name is the Name of the
// backend it opens, so that --backend and the config name what runs.
func TestNamesAreTheBackends(t *testing.T) {
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, e := range List() {
		b, err := e.Open(m, Options{Threads: 1})
		if err != nil {
			t.Logf("%s: not available here: %v", e.Name, err)
			if b != nil {
				t.Errorf("%s: a failed Open returned a non-nil backend %T", e.Name, b)
			}
			continue
		}
		if b.Name() != e.Name {
			t.Errorf("entry %q opens a backend named %q", e.Name, b.Name())
		}
		b.Close()
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		reason, name, want string
	}{
		{"the reference backend", "cpu", ""},
		{"the MLX backend, whether or not libmlxc is here", "mlx", ""},
		{"the caller's pick", "auto", ""},
		{"an unknown name lists the choices", "gpu", `"gpu": want cpu, mlx or auto`},
		{"names are exact", "CPU", `"CPU": want`},
	} {
		err := Check(tc.name)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%s: Check(%q) = %v, want %q", tc.reason, tc.name, err, tc.want)
		}
	}
}
