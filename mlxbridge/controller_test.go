package mlxbridge_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers"
	_ "github.com/driftwoodlabs/driftwood/controllers/shipped"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

// TestControllersOnDevice: shipped controllers constraining replies on
// MLX give the same replies, greedy and seeded, whether the tokens are
// picked on the device (the mask wrapped from the guest's memory) or on
// the host from logits read back: the seed's chain changes where the
// choice is made, not what is chosen.
func TestControllersOnDevice(t *testing.T) {
	if _, err := mlxbridge.Load(""); err != nil {
		t.Skipf("MLX tests skipped: %v", err)
	}
	name := "tiny-f32"
	m, err := engine.LoadModel(golden.ModelDir(name))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := golden.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(golden.ModelDir(name), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	vocab := m.Config.VocabSize
	host, err := controllers.NewHost(tok, vocab, controllers.HostOptions{Dirs: []string{filepath.Join(t.TempDir(), "none")}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	cases := []struct{ controller, arg string }{
		{"regex", "[a-z]+( [a-z]+){2,5}\\."},
		{"choice", `["red","green","blue","yellow"]`},
		{"json", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`},
	}
	configs := []engine.SamplerConfig{
		{TopP: 1, RepeatPenalty: 1},
		{Temperature: 0.9, TopP: 1, RepeatPenalty: 1, Seed: 5},
		{Temperature: 1, TopK: 20, TopP: 0.9, RepeatPenalty: 1.1, RepeatLastN: 16, Seed: 6},
	}
	replies := func(where string) (out [][]int32) {
		b, err := mlxbridge.New(m, mlxbridge.Options{Device: "cpu", KVType: engine.KVF32, Sampling: where})
		if err != nil {
			t.Skipf("%s (mlx-c 0.5.0 and later can)", err)
		}
		defer b.Close()
		if b.SamplesOnDevice() != (where == "device") {
			t.Fatalf("sampling %q: SamplesOnDevice says %v", where, b.SamplesOnDevice())
		}
		for _, c := range cases {
			if _, err := host.Switch(c.controller, c.arg); err != nil {
				t.Fatal(err)
			}
			for _, cfg := range configs {
				gen := engine.NewGenerator(b, engine.NewSampler(cfg, vocab), vocab)
				gen.Hook, gen.MaxTokens = host, 40
				cache, err := b.NewCache(256)
				if err != nil {
					t.Fatal(err)
				}
				seq := &engine.Sequence{Cache: cache}
				var reply []int32
				st, err := gen.Generate(context.Background(), seq, g.Prompt.IDs, func(e engine.Event) error {
					reply = append(reply[:len(reply)-e.Backtrack], e.Token)
					if e.Token < 0 {
						reply = reply[:len(reply)-1]
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				cache.Close()
				out = append(out, append(reply, int32(st.Overrides), int32(len(st.Reason))))
			}
		}
		return out
	}
	onDevice, onHost := replies("device"), replies("host")
	for i := range onDevice {
		if !slices.Equal(onDevice[i], onHost[i]) {
			t.Errorf("%s, sampler %d: on the device %v, on the host %v", cases[i/len(configs)].controller, i%len(configs), onDevice[i], onHost[i])
		}
	}
	t.Logf("%d replies equal, e.g. %q", len(onDevice), tok.Decode(onDevice[1][:len(onDevice[1])-2]))
}
