package cpu

import (
	"os"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// benchModel opens the model folder named by DRIFTWOOD_BENCH_MODEL (for
// example one made by `driftwood dev gen-model --shape llama-3.2-1b`), or
// skips.
func benchModel(b *testing.B) (*Backend, *engine.Model) {
	dir := os.Getenv("DRIFTWOOD_BENCH_MODEL")
	if dir == "" {
		b.Skip("DRIFTWOOD_BENCH_MODEL is not set")
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		b.Fatal(err)
	}
	be, err := New(m, Options{MaxBatch: benchBatch})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close(); m.Close() })
	return be, m
}

// BenchmarkDecode times one decode step after a 64-token prompt.
func BenchmarkDecode(b *testing.B) {
	be, m := benchModel(b)
	c, err := be.NewCache(512)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, m.Config.VocabSize)
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i * 37)
	}
	if err := be.Forward(c, prompt, logits); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		c.Truncate(len(prompt))
		if err := be.Forward(c, []int32{9}, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkPrefill times a 64-token prompt.
func BenchmarkPrefill(b *testing.B) {
	be, m := benchModel(b)
	c, err := be.NewCache(512)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, m.Config.VocabSize)
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i * 37)
	}
	b.ResetTimer()
	for range b.N {
		c.Truncate(0)
		if err := be.Forward(c, prompt, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tok/s")
}
