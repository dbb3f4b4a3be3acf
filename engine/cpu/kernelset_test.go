package cpu

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// TestKernelSetsSideBySide runs backends on different kernel sets at the
// same time, each decode loop in its own goroutine: the portable set, the
// float reference and the fastest (int8 where the CPU has it), on a model
// whose products each set rounds its own way. Each must give, bit for bit,
// what it gives alone; a kernel set shared by the process would let one
// compute on another's.
func TestKernelSetsSideBySide(t *testing.T) {
	names := []string{goKernels.name, "float", kernelSets[len(kernelSets)-1].name}
	fixtures := make([]*fixture, len(names))
	alone := make([][]float32, len(names))
	for i, name := range names {
		fixtures[i] = load(t, "tiny-mlx-q4", Options{Threads: 1, Kernels: name})
		alone[i] = decodeLogits(t, fixtures[i])
	}
	if len(kernelSets) > 1 && slices.Equal(alone[0], alone[len(names)-1]) {
		t.Fatal("the portable and the fastest set gave the same bits: the test could not tell them apart")
	}
	const rounds = 4
	var wg sync.WaitGroup
	got := make([][][]float32, len(names))
	for i, f := range fixtures {
		wg.Go(func() {
			for range rounds {
				got[i] = append(got[i], decodeLogits(t, f))
			}
		})
	}
	wg.Wait()
	for i, name := range names {
		for r, logits := range got[i] {
			if !slices.EqualFunc(logits, alone[i], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Errorf("%s, round %d beside the others: logits differ from its own run alone (max |Δ| %.2g)", name, r, maxDiff(logits, alone[i]))
			}
		}
	}
}

// decodeLogits runs f's golden prompt and eight greedy steps through a new
// cache and returns every step's logits.
func decodeLogits(t *testing.T, f *fixture) []float32 {
	c := f.cache(t)
	vocab := f.m.Config.VocabSize
	logits := make([]float32, vocab)
	var all []float32
	if err := f.b.Forward(c, f.g.Prompt.IDs, logits); err != nil {
		t.Error(err)
		return nil
	}
	for range 8 {
		all = append(all, logits...)
		if err := f.b.Forward(c, []int32{int32(engine.Argmax(logits))}, logits); err != nil {
			t.Error(err)
			return nil
		}
	}
	return append(all, logits...)
}
