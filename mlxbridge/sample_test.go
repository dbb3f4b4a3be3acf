package mlxbridge

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// TestPickOnDevice: on MLX, Pick chooses what the engine's Sampler
// chooses from the same logits and seed, greedy and sampled under every
// setting, unrestricted, through a mask wrapped in place (straddling a
// page boundary, as a guest's may), a mask copied, and a list; and it
// reports the same top token. Each step feeds the chosen token, so the
// logits are a real model's along its own continuation.
func TestPickOnDevice(t *testing.T) {
	requireWrap(t)
	f := load(t, "tiny-f32", Options{KVType: engine.KVF32, Sampling: "device"})
	vocab := f.m.Config.VocabSize
	words := (vocab + 31) / 32
	// The mask's first word on the first page, the rest on the second.
	page := os.Getpagesize()
	_, pages := pageMask(2 * page / 4)
	inPages := unsafe.Slice((*uint32)(unsafe.Pointer(&pages[page-4])), words)
	configs := []engine.SamplerConfig{
		{TopP: 1, RepeatPenalty: 1},
		{Temperature: 0.8, TopP: 1, RepeatPenalty: 1},
		{Temperature: 1, TopK: 5, TopP: 1, RepeatPenalty: 1},
		{Temperature: 1.2, TopP: 0.9, RepeatPenalty: 1},
		{Temperature: 0.7, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1},
		{Temperature: 1, TopP: 1, RepeatPenalty: 1.3, RepeatLastN: 8},
	}
	logits := make([]float32, vocab)
	for ci, cfg := range configs {
		cfg.Seed = uint64(ci + 1)
		host, dev := engine.NewSampler(cfg, vocab), engine.NewSampler(cfg, vocab)
		c := f.cache(t)
		seq := slices.Clone(f.g.Prompt.IDs)
		if err := f.b.ForwardKeep(c, seq); err != nil {
			t.Fatal(err)
		}
		for step := range 24 {
			if err := f.b.ReadLogits(c, logits); err != nil {
				t.Fatal(err)
			}
			var p engine.Pick
			copied := make([]uint32, words)
			for i := range copied {
				copied[i] = uint32(0x9e3779b9 * (i + step + 1))
			}
			kind := step % 4
			var want int32
			switch kind {
			case 0:
				want = host.Sample(slices.Clone(logits), seq, -1)
			case 1:
				copy(inPages, copied)
				p.Mask, p.MaskPages = inPages, pages
				want = host.SampleMask(slices.Clone(logits), inPages, seq, -1)
			case 2:
				p.Mask = copied
				want = host.SampleMask(slices.Clone(logits), copied, seq, -1)
			case 3:
				p.Allowed = []int32{int32(step), int32(vocab - 1), 17, int32(step * 7 % vocab)}
				want = host.SampleAmong(slices.Clone(logits), slices.Clone(p.Allowed), seq, -1)
			}
			dev.Pick(&p, seq, -1)
			got, top, err := f.b.Pick(c, &p)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || top != engine.Argmax(logits) {
				t.Fatalf("config %d step %d (restriction %d): MLX picked %d (top %d), the sampler %d (top %d)", ci, step, kind, got, top, want, engine.Argmax(logits))
			}
			seq = append(seq, got)
			if err := f.b.ForwardKeep(c, seq[len(seq)-1:]); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
}

// requireWrap skips a test of sampling on the device when the library
// cannot wrap memory (mlx-c before 0.5.0), after checking that New
// refuses to sample on the device then.
func requireWrap(t testing.TB) {
	t.Helper()
	requireLibrary(t)
	lib, err := open("")
	if err != nil {
		t.Fatal(err)
	}
	var can bool
	lib.Do(func(th *mlxc.Thread) error { can = th.CanWrap(); return nil })
	if !can {
		m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if b, err := New(m, Options{Device: "cpu", Sampling: "device"}); err == nil {
			b.Close()
			t.Errorf("mlx-c %s cannot wrap memory, yet New samples on the device", lib.Release.Name)
		}
		t.Skipf("mlx-c %s cannot wrap memory (0.5.0 and later can): tokens are sampled on the host", lib.Release.Name)
	}
}

// TestSamplingOption: "" samples on the device only on a GPU; "host"
// never; anything else is refused.
func TestSamplingOption(t *testing.T) {
	requireWrap(t)
	for _, c := range []struct {
		where string
		want  bool
	}{{"", false}, {"host", false}, {"device", true}} { // on MLX's CPU device
		f := load(t, "tiny-f32", Options{Sampling: c.where})
		if f.b.SamplesOnDevice() != c.want {
			t.Errorf("sampling %q on the cpu: on the device %v, want %v", c.where, f.b.SamplesOnDevice(), c.want)
		}
	}
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := New(m, Options{Device: "cpu", Sampling: "gpu"}); err == nil || !strings.Contains(err.Error(), `sampling "gpu"`) {
		t.Errorf("sampling \"gpu\": %v, want a refusal naming it", err)
	}
}

// TestMaskChain: doctor's check runs and says what MLX does with wrapped
// memory on this machine (on MLX's CPU device, a copy).
func TestMaskChain(t *testing.T) {
	requireWrap(t)
	zero, err := MaskChain(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("on MLX's cpu device the mask reaches MLX without a copy: %v", zero)
}
