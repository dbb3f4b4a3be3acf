package mlxbridge

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// BenchmarkDecodeTiny times one decode step on a tiny model: mostly the
// bridge's own cost per step (about 20 MLX calls per layer through purego
// and the dispatcher), since the model's arithmetic is negligible.
func BenchmarkDecodeTiny(b *testing.B) {
	f := load(b, "tiny-mlx-q4", Options{})
	vocab := f.m.Config.VocabSize
	c := f.cache(b)
	logits := make([]float32, vocab)
	if err := f.b.Forward(c, f.g.Prompt.IDs, logits); err != nil {
		b.Fatal(err)
	}
	n := c.Len()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c.Len() == c.Window() {
			c.Truncate(n)
		}
		if err := f.b.Forward(c, []int32{1}, logits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPick times choosing one token from Llama 3's vocabulary of
// 128,256 logits already on the device: on the device (Pick: the graph,
// one evaluation, two ids back) against reading the logits back and
// sampling on the host (ReadLogits + Sampler), greedy and with the
// default top-p sampling, unrestricted and under a mask of half the
// vocabulary wrapped from page-aligned memory.
func BenchmarkPick(b *testing.B) {
	requireWrap(b)
	f := load(b, "tiny-f32", Options{KVType: engine.KVF32, Sampling: "device"})
	const vocab = 128256
	cfg := *f.b.cfg
	cfg.VocabSize = vocab
	f.b.cfg = &cfg
	c := f.cache(b).(*cache)
	rng := rand.New(rand.NewPCG(1, 1))
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 4)
	}
	f.b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(f.b.stream)
		c.kv.logits = t.Keep(t.FromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&logits[0])), 4*vocab), []int{vocab}, mlxc.Float32))
		return nil
	})
	mask, pages := pageMask((vocab + 31) / 32)
	for i := range mask {
		mask[i] = 0x5555_5555
	}
	host := make([]float32, vocab)
	for _, s := range []struct {
		name string
		cfg  engine.SamplerConfig
	}{{"greedy", engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}}, {"top-p", engine.DefaultSamplerConfig()}} {
		for _, masked := range []bool{false, true} {
			name := s.name
			if masked {
				name += "-mask"
			}
			sampler := engine.NewSampler(s.cfg, vocab)
			b.Run(name+"/device", func(b *testing.B) {
				for b.Loop() {
					var p engine.Pick
					if masked {
						p.Mask, p.MaskPages = mask, pages
					}
					sampler.Pick(&p, nil, -1)
					if _, _, err := f.b.Pick(c, &p); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/host", func(b *testing.B) {
				for b.Loop() {
					if err := f.b.ReadLogits(c, host); err != nil {
						b.Fatal(err)
					}
					if masked {
						sampler.SampleMask(host, mask, nil, -1)
					} else {
						sampler.Sample(host, nil, -1)
					}
				}
			})
		}
	}
}

// BenchmarkStepTiny times a whole decode step on a tiny model (vocabulary
// 512), with Llama 3.2's default sampling: the forward pass and the pick
// on the device, against the forward pass, the logits read back and the
// host's sampler.
func BenchmarkStepTiny(b *testing.B) {
	requireWrap(b)
	for _, where := range []string{"device", "host"} {
		b.Run(where, func(b *testing.B) {
			f := load(b, "tiny-mlx-q4", Options{Sampling: where})
			vocab := f.m.Config.VocabSize
			c := f.cache(b)
			logits := make([]float32, vocab)
			s := engine.NewSampler(engine.DefaultSamplerConfig(), vocab)
			if err := f.b.ForwardKeep(c, f.g.Prompt.IDs); err != nil {
				b.Fatal(err)
			}
			n := c.Len()
			tok := []int32{1}
			for b.Loop() {
				if c.Len() == c.Window() {
					c.Truncate(n)
				}
				var err error
				if where == "device" {
					var p engine.Pick
					s.Pick(&p, nil, -1)
					if err = f.b.ForwardKeep(c, tok); err == nil {
						tok[0], _, err = f.b.Pick(c, &p)
					}
				} else if err = f.b.Forward(c, tok, logits); err == nil {
					tok[0] = s.Sample(logits, nil, -1)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
