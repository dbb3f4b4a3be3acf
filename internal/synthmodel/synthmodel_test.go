package synthmodel

import (
	"math"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
)

// small is a Llama-shaped model small enough to write in a test.
var small = Shape{Hidden: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Intermediate: 256, Vocab: 300,
	RopeFactor: 32, RopeLow: 1, RopeHigh: 4, RopeOriginal: 64, MaxPositions: 256, BOS: 256, EOS: []int{257, 258}}

// TestWrittenModelsLoadAndRun writes every dtype, loads it through the
// engine and checks the logits are finite and of a plausible spread.
func TestWrittenModelsLoadAndRun(t *testing.T) {
	for _, dtype := range Dtypes {
		t.Run(dtype, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(dir, Options{Shape: small, Dtype: dtype, Seed: 1, GroupSize: 32}); err != nil {
				t.Fatal(err)
			}
			m, err := engine.LoadModel(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if q := m.Weights.Layers[0].UpProj.Quantized(); q != (dtype == "q4" || dtype == "q8") {
				t.Errorf("quantised = %v", q)
			}
			b, err := cpu.New(m, cpu.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			c, _ := b.NewCache(16)
			logits := make([]float32, small.Vocab)
			if err := b.Forward(c, []int32{256, 1, 2, 3}, logits); err != nil {
				t.Fatal(err)
			}
			var sum, sq float64
			for _, l := range logits {
				if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
					t.Fatalf("logit %g", l)
				}
				sum += float64(l)
				sq += float64(l) * float64(l)
			}
			mean := sum / float64(len(logits))
			if sd := math.Sqrt(sq/float64(len(logits)) - mean*mean); sd < 1e-3 || sd > 100 {
				t.Errorf("logits have standard deviation %g", sd)
			}
		})
	}
}

func TestWriteRejectsUnknownDtype(t *testing.T) {
	if err := Write(t.TempDir(), Options{Shape: small, Dtype: "q3"}); err == nil {
		t.Error("dtype q3 accepted")
	}
}
