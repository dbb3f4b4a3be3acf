package backends

import (
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
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

// TestFloatCPU checks that the reference runs on the float kernels while
// a backend on the default set runs beside it.
func TestFloatCPU(t *testing.T) {
	m, err := engine.LoadModel(golden.ModelDir("tiny-mlx-q4"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	def, err := cpu.New(m, cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	b, err := FloatCPU(m)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, _ := b.NewCache(8)
	got := make([]float32, m.Config.VocabSize)
	if err := b.Forward(c, []int32{1}, got); err != nil {
		t.Fatal(err)
	}
	if b.(*cpu.Backend).Int8() {
		t.Errorf("the reference runs on %s, an int8 set", b.(*cpu.Backend).Kernels())
	}
	if name, _, _ := cpu.DefaultKernels(); def.Kernels() != name {
		t.Errorf("a backend beside it runs on %s, want the default %s", def.Kernels(), name)
	}
	ref, _ := cpu.New(m, cpu.Options{Threads: 1, KVType: engine.KVF32, Kernels: "float"})
	defer ref.Close()
	rc, _ := ref.NewCache(8)
	want := make([]float32, m.Config.VocabSize)
	if err := ref.Forward(rc, []int32{1}, want); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logit %d: %g, the float kernels give %g", i, got[i], want[i])
		}
	}
}
