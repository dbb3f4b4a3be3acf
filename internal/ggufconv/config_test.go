package ggufconv

import (
	"math"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// llama3Factors are the rope_freqs llama.cpp's converter writes for
// llama3 scaling (float32, one per pair of a head's dimensions), as
// bench/ggufgen computes them.
func llama3Factors(theta float64, headDim int, factor, low, high float64, orig int) []float64 {
	L := float64(orig)
	lowWL, highWL := L/low, L/high
	out := make([]float64, headDim/2)
	for i := range out {
		wl := 2 * math.Pi * math.Pow(theta, float64(2*i)/float64(headDim))
		switch {
		case wl < highWL:
			out[i] = 1
		case wl > lowWL:
			out[i] = float64(float32(factor))
		default:
			sm := (L/wl - low) / (high - low)
			out[i] = float64(float32(1 / ((1-sm)/factor + sm)))
		}
	}
	return out
}

// TestRopeScaling: rope_freqs become the llama3 rope_scaling that gives
// the same frequencies: Llama 3.1's and 3.2's own parameters back (their
// 6 factors between 1 and factor fix them), and for the test models,
// whose one such factor leaves them open, parameters that give the same
// frequencies. No factors, or all 1, is no scaling.
func TestRopeScaling(t *testing.T) {
	for _, c := range []struct {
		name    string
		theta   float64
		headDim int
		scaling ropeScaling
		same    bool // the parameters themselves come back
	}{
		{"Llama 3.1 8B", 500000, 128, ropeScaling{"llama3", 8, 1, 4, 8192}, true},
		{"Llama 3.2 1B", 500000, 64, ropeScaling{"llama3", 32, 1, 4, 8192}, true},
		{"tiny-f32", 500000, 16, ropeScaling{"llama3", 32, 1, 4, 16}, false},
	} {
		s := c.scaling
		cfg := &engine.Config{RopeTheta: c.theta, HeadDim: c.headDim,
			RopeFactors: llama3Factors(c.theta, c.headDim, s.Factor, s.LowFreqFactor, s.HighFreqFactor, s.OriginalMaxPositionEmbeddings)}
		got, err := ropeScalingOf(cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !sameFrequencies(cfg, *got) {
			t.Errorf("%s: %+v does not give the file's frequencies", c.name, *got)
		}
		if c.same && *got != s {
			t.Errorf("%s: %+v, want its own %+v", c.name, *got, s)
		}
	}
	for _, factors := range [][]float64{nil, {1, 1, 1, 1}} {
		if got, err := ropeScalingOf(&engine.Config{RopeTheta: 10000, HeadDim: 8, RopeFactors: factors}); got != nil || err != nil {
			t.Errorf("factors %v: %+v, %v; want no scaling", factors, got, err)
		}
	}
}

// TestRopeScalingRefused: factors that no llama3 scaling gives are
// refused, naming rope_freqs, rather than written as something else.
func TestRopeScalingRefused(t *testing.T) {
	for _, c := range []struct {
		factors []float64
		reason  string
	}{
		{[]float64{1, 1, 0.5, 0.5}, "factors below 1 speed rotation up; llama3 only slows it"},
		{[]float64{1, 2, 1, 2}, "factors rise and fall again"},
		{[]float64{1, 1.5, 2, 3, 8, 8, 8, 8}, "the three factors between 1 and 8 are not on one line in 1/wavelength"},
	} {
		cfg := &engine.Config{RopeTheta: 10000, HeadDim: 2 * len(c.factors), RopeFactors: c.factors}
		if got, err := ropeScalingOf(cfg); err == nil || !strings.Contains(err.Error(), "rope_freqs.weight") {
			t.Errorf("%v (%s): %+v, %v; want an error naming rope_freqs.weight", c.factors, c.reason, got, err)
		}
	}
}
