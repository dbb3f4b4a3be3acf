package mlxbridge

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// floatCPU is the self-check's reference: the CPU backend on its float
// kernels.
func floatCPU(m *engine.Model) (engine.Backend, error) {
	return cpu.New(m, cpu.Options{Threads: 1, KVType: engine.KVF32, Kernels: "float"})
}

// TestSelfCheckModel checks that the self-check's model is a usable
// Llama on the CPU backend: finite logits with a spread, different for
// different tokens, so that a wrong computation cannot match it by luck.
func TestSelfCheckModel(t *testing.T) {
	m, err := selfCheckModel()
	if err != nil {
		t.Fatal(err)
	}
	b, err := floatCPU(m)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, _ := b.NewCache(16)
	v := m.Config.VocabSize
	logits := make([]float32, 2*v)
	if err := b.Forward(c, []int32{3, 10}, logits); err != nil {
		t.Fatal(err)
	}
	var sq, diff float64
	for i, l := range logits[:v] {
		if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
			t.Fatalf("logit %g", l)
		}
		sq += float64(l) * float64(l)
		diff = max(diff, math.Abs(float64(l-logits[v+i])))
	}
	if rms := math.Sqrt(sq / float64(v)); rms < 0.1 || rms > 50 || diff < 0.01 {
		t.Errorf("logits rms %.3g, largest change between two tokens %.3g", rms, diff)
	}
}

// newerFake is a fake library marked newer than every known release.
func newerFake() (*mlxc.Lib, *mlxc.Fake) {
	lib, f := mlxc.NewFake()
	lib.MarkNewer("the test says so")
	return lib, f
}

// TestSelfCheckRefusesWrongNumbers runs the self-check over a fake table
// whose arrays all read back as 0.5: it must fail at its first
// comparison, and New must refuse the library, naming the trust variable.
func TestSelfCheckRefusesWrongNumbers(t *testing.T) {
	t.Setenv(TrustEnvVar, "")
	lib, f := newerFake()
	f.Numbers = make([]float32, 1<<16)
	for i := range f.Numbers {
		f.Numbers[i] = 0.5
	}
	ref := floatCPU
	_, err := SelfCheck(Options{lib: lib, Device: "cpu"}, ref)
	var se *SelfCheckError
	if !errors.As(err, &se) || se.Step != "a 250-token prompt" || !strings.Contains(err.Error(), "is 0.5 on MLX and") {
		t.Fatalf("SelfCheck = %v, want the first step's disagreement", err)
	}
	m, _ := selfCheckModel()
	_, err = New(m, Options{lib: lib, Reference: ref})
	if err == nil || !strings.Contains(err.Error(), "failed Driftwood's self-check") || !strings.Contains(err.Error(), TrustEnvVar+"=1") {
		t.Errorf("New on a newer library with wrong numbers = %v", err)
	}
	t.Setenv(TrustEnvVar, "1")
	calls := f.Calls("mlx_fast_rope")
	b, err := New(m, Options{lib: lib, Reference: ref})
	if err != nil {
		t.Fatalf("with %s=1: %v", TrustEnvVar, err)
	}
	b.Close()
	if f.Calls("mlx_fast_rope") != calls {
		t.Errorf("with %s=1 the self-check still ran", TrustEnvVar)
	}
}

// TestSelfCheckRefusesErrors runs it over a fake table whose RoPE fails,
// and over one with no reference.
func TestSelfCheckRefusesErrors(t *testing.T) {
	t.Setenv(TrustEnvVar, "")
	lib, f := newerFake()
	f.Fail["mlx_fast_rope"] = "[rope] the test's failure"
	_, err := SelfCheck(Options{lib: lib}, floatCPU)
	var me *mlxc.Error
	if !errors.As(err, &me) || me.Func != "mlx_fast_rope" || !strings.Contains(err.Error(), "self-check: a 250-token prompt: ") {
		t.Fatalf("SelfCheck = %v, want the prompt step's rope error", err)
	}
	m, _ := selfCheckModel()
	if _, err := New(m, Options{lib: lib}); err == nil || !strings.Contains(err.Error(), "newer than every mlx-c release") {
		t.Errorf("New on a newer library without a reference = %v, want a refusal", err)
	}
	known, _ := mlxc.NewFake()
	if b, err := New(m, Options{lib: known}); err != nil {
		t.Errorf("a known release needs no self-check: %v", err)
	} else {
		b.Close()
	}
}

// TestSelfCheckRealLibrary runs the self-check against libmlxc where
// there is one, on MLX's CPU device (GPU numerics have their own
// tolerance story) and on the device New picks.
func TestSelfCheckRealLibrary(t *testing.T) {
	requireLibrary(t)
	for _, dev := range []string{"cpu", ""} {
		r, err := SelfCheck(Options{Device: dev}, floatCPU)
		if err != nil {
			t.Fatalf("device %q: %v", dev, err)
		}
		t.Logf("self-check on %s: %s", dev, r)
	}
}

// TestNewerRealLibraryIsSelfChecked takes the real library as a known
// release and as a newer one: New must run the self-check (and pass it)
// on the newer one only, before loading the model; it logs what that adds
// to the load.
func TestNewerRealLibraryIsSelfChecked(t *testing.T) {
	requireLibrary(t)
	t.Setenv(TrustEnvVar, "")
	lib, err := open("")
	if err != nil {
		t.Fatal(err)
	}
	saved := lib.Release
	defer func() { lib.Release = saved }()
	m, err := selfCheckModel()
	if err != nil {
		t.Fatal(err)
	}
	ref, checks := floatCPU, 0
	counted := func(m *engine.Model) (engine.Backend, error) { checks++; return ref(m) }
	load := func() time.Duration {
		start := time.Now()
		b, err := New(m, Options{lib: lib, Device: "cpu", Reference: counted})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		return time.Since(start)
	}
	lib.Release.Newer = false
	known := load()
	if checks != 0 {
		t.Errorf("a known release was self-checked (%d references opened)", checks)
	}
	lib.MarkNewer("the test says so")
	newer := load()
	if checks == 0 {
		t.Error("a newer release was not self-checked")
	}
	t.Logf("New on the self-check's model: %s for a known release, %s for a newer one (the self-check included)", known, newer)
}
