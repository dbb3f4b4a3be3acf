package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSamplerGreedy(t *testing.T) {
	s := NewSampler(SamplerConfig{TopP: 1, RepeatPenalty: 1}, 4)
	if got := s.Sample([]float32{1, 3, 3, 2}, nil, -1); got != 1 {
		t.Errorf("greedy picked %d, want the first of the tied maxima, 1", got)
	}
}

func TestSamplerSeedIsReproducible(t *testing.T) {
	draw := func(seed uint64) []int32 {
		s := NewSampler(SamplerConfig{Temperature: 1, TopP: 1, RepeatPenalty: 1, Seed: seed}, 8)
		var out []int32
		for i := 0; i < 50; i++ {
			out = append(out, s.Sample([]float32{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}, nil, -1))
		}
		return out
	}
	if a, b := draw(1), draw(1); !slices.Equal(a, b) {
		t.Error("the same seed gave different tokens")
	}
	if a, b := draw(1), draw(2); slices.Equal(a, b) {
		t.Error("different seeds gave the same 50 tokens")
	}
}

// TestSamplerDistribution checks that temperature-1 sampling follows the
// softmax of the logits (a fixed seed keeps this deterministic).
func TestSamplerDistribution(t *testing.T) {
	logits := []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.2))}
	s := NewSampler(SamplerConfig{Temperature: 1, TopP: 1, RepeatPenalty: 1, Seed: 3}, 3)
	counts := make([]int, 3)
	const n = 20000
	for i := 0; i < n; i++ {
		counts[s.Sample(slices.Clone(logits), nil, -1)]++
	}
	for i, p := range []float64{0.5, 0.3, 0.2} {
		if got := float64(counts[i]) / n; math.Abs(got-p) > 0.015 {
			t.Errorf("token %d drawn with frequency %.3f, want %.2f", i, got, p)
		}
	}
}

func TestSamplerFilters(t *testing.T) {
	inf := float32(math.Inf(-1))
	cases := []struct {
		reason  string
		cfg     SamplerConfig
		logits  []float32
		allowed []int32
	}{
		{"top-k 2 keeps the two likeliest", SamplerConfig{Temperature: 5, TopK: 2, TopP: 1, RepeatPenalty: 1}, []float32{1, 4, 3, 2}, []int32{1, 2}},
		{"top-p 0.9 keeps a token of probability 0.95 alone", SamplerConfig{Temperature: 1, TopP: 0.9, RepeatPenalty: 1}, []float32{0, float32(math.Log(0.95 / 0.05 * 3)), 0, 0}, []int32{1}},
		{"min-p drops tokens far below the best", SamplerConfig{Temperature: 1, MinP: 0.5, TopP: 1, RepeatPenalty: 1}, []float32{0, 0.1, -3, -5}, []int32{0, 1}},
		{"masked tokens are never drawn", SamplerConfig{Temperature: 100, TopP: 1, RepeatPenalty: 1}, []float32{inf, 0, inf, 0}, []int32{1, 3}},
	}
	for _, c := range cases {
		s := NewSampler(c.cfg, len(c.logits))
		seen := map[int32]bool{}
		for i := 0; i < 500; i++ {
			tok := s.Sample(slices.Clone(c.logits), nil, -1)
			if !slices.Contains(c.allowed, tok) {
				t.Errorf("%s: drew %d, allowed %v", c.reason, tok, c.allowed)
				break
			}
			seen[tok] = true
		}
		if len(seen) != len(c.allowed) {
			t.Errorf("%s: drew only %v of %v", c.reason, seen, c.allowed)
		}
	}
}

func TestSamplerAllMasked(t *testing.T) {
	inf := float32(math.Inf(-1))
	for _, temp := range []float64{0, 1} {
		s := NewSampler(SamplerConfig{Temperature: temp, TopP: 0.5, RepeatPenalty: 1}, 2)
		if got := s.Sample([]float32{inf, inf}, nil, -1); got != -1 {
			t.Errorf("temperature %g: all masked gave %d, want -1", temp, got)
		}
	}
}

func TestSamplerTemperatureOverride(t *testing.T) {
	s := NewSampler(SamplerConfig{Temperature: 50, TopP: 1, RepeatPenalty: 1}, 3)
	for i := 0; i < 100; i++ {
		if got := s.Sample([]float32{0, 1, 0.5}, nil, 0); got != 1 {
			t.Fatalf("a per-step temperature of 0 must be greedy, drew %d", got)
		}
	}
}

func TestRepeatPenaltyAppliesOncePerToken(t *testing.T) {
	s := NewSampler(SamplerConfig{TopP: 1, RepeatPenalty: 2, RepeatLastN: 64}, 3)
	logits := []float32{4, 3, -1}
	if got := s.Sample(logits, []int32{0, 0, 0, 2}, -1); got != 1 {
		t.Errorf("penalised token still won: %d", got)
	}
	if want := []float32{2, 3, -2}; !slices.Equal(logits, want) {
		t.Errorf("logits after penalty = %v, want %v (once per distinct token)", logits, want)
	}
}

func TestSelectTopMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(300)
		s := NewSampler(SamplerConfig{}, n)
		cand := make([]int32, n)
		for i := range cand {
			cand[i] = int32(i)
			s.w[i] = float32(rng.IntN(20)) // many ties
		}
		k := 1 + rng.IntN(n)
		s.selectTop(cand, k)
		top := make([]float32, k)
		for i := range top {
			top[i] = s.w[cand[i]]
		}
		all := slices.Clone(s.w)
		slices.Sort(all)
		slices.Reverse(all)
		slices.Sort(top)
		slices.Reverse(top)
		if !slices.Equal(top, all[:k]) {
			t.Fatalf("n=%d k=%d: selected %v, want %v", n, k, top, all[:k])
		}
	}
}

// TestNucleusLargeVocabulary exercises the growing top-m search on a
// Llama-sized vocabulary with a flat tail.
func TestNucleusLargeVocabulary(t *testing.T) {
	const vocab = 128256
	logits := make([]float32, vocab)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	s := NewSampler(SamplerConfig{Temperature: 1, TopP: 0.5, RepeatPenalty: 1, Seed: 1}, vocab)
	tok := s.Sample(slices.Clone(logits), nil, -1)
	// The kept set is the likeliest half of the mass: the token drawn must
	// be at least as likely as the median-mass boundary.
	sorted := slices.Clone(logits)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	var total, sum float64
	for _, l := range sorted {
		total += math.Exp(float64(l))
	}
	cut := sorted[len(sorted)-1]
	for _, l := range sorted {
		sum += math.Exp(float64(l))
		if sum >= 0.5*total {
			cut = l
			break
		}
	}
	if logits[tok] < cut-1e-4 {
		t.Errorf("drew a token with logit %g below the nucleus boundary %g", logits[tok], cut)
	}
	if n := testing.AllocsPerRun(20, func() { s.Sample(logits, nil, -1) }); n != 0 {
		t.Errorf("Sample allocated %v times per call", n)
	}
}

func TestSamplerConfigValidate(t *testing.T) {
	if err := DefaultSamplerConfig().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	bad := DefaultSamplerConfig()
	bad.TopP = 0
	if err := bad.Validate(); err == nil {
		t.Error("top_p 0 accepted")
	}
}

func TestSampleAmong(t *testing.T) {
	s := NewSampler(SamplerConfig{Temperature: 1, TopP: 1, RepeatPenalty: 1}, 6)
	logits := []float32{9, 0, 1, 9, 0.5, 9}
	allowed := []int32{4, 2, 99, -1}
	seen := map[int32]bool{}
	for i := 0; i < 300; i++ {
		tok := s.SampleAmong(logits, allowed, nil, -1)
		if tok != 2 && tok != 4 {
			t.Fatalf("drew %d outside the allowed {2, 4}", tok)
		}
		seen[tok] = true
	}
	if len(seen) != 2 {
		t.Errorf("drew only %v", seen)
	}
	if got := s.SampleAmong(logits, allowed, nil, 0); got != 2 {
		t.Errorf("greedy among allowed = %d, want 2", got)
	}
	if got := s.SampleAmong(logits, []int32{}, nil, -1); got != -1 {
		t.Errorf("empty allowed list gave %d, want -1", got)
	}
}

func TestSampleMask(t *testing.T) {
	s := NewSampler(SamplerConfig{Temperature: 1, TopP: 1, RepeatPenalty: 1}, 70)
	logits := make([]float32, 70)
	logits[3], logits[40] = 5, 9
	mask := []uint32{1<<3 | 1<<7, 1 << 1, 1 << 31} // 3, 7, 33, and 95 (past the vocabulary)
	for i := 0; i < 200; i++ {
		if tok := s.SampleMask(logits, mask, nil, -1); tok != 3 && tok != 7 && tok != 33 {
			t.Fatalf("drew %d outside the mask", tok)
		}
	}
	if got := s.SampleMask(logits, mask, nil, 0); got != 3 {
		t.Errorf("greedy under the mask = %d, want 3 (40 is masked)", got)
	}
	if got := s.SampleMask(logits, []uint32{0, 0, 0}, nil, -1); got != -1 {
		t.Errorf("empty mask gave %d", got)
	}
}

// TestSamplerNonFinite: logits with no finite maximum among the allowed
// tokens give NonFinite, not -1 (which a reply takes for its end), for
// every way of sampling; -Inf everywhere is still "all masked".
func TestSamplerNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, temp := range []float64{0, 1} {
		s := NewSampler(SamplerConfig{Temperature: temp, TopP: 0.5, RepeatPenalty: 1}, 4)
		for _, c := range []struct {
			reason string
			got    int32
		}{
			{"all NaN", s.Sample([]float32{nan, nan, nan, nan}, nil, -1)},
			{"a +Inf", s.Sample([]float32{0, inf, 1, 2}, nil, -1)},
			{"the one allowed token NaN", s.SampleAmong([]float32{0, nan, 1, 2}, []int32{1}, nil, -1)},
			{"the masked-in tokens NaN", s.SampleMask([]float32{0, nan, nan, 2}, []uint32{0b0110}, nil, -1)},
		} {
			if c.got != NonFinite {
				t.Errorf("temperature %g, %s: got %d, want NonFinite", temp, c.reason, c.got)
			}
		}
	}
}

// TestSamplerFreshSeed checks seed 0: every sampler draws its own seed
// (never 0), and giving that seed back reproduces its samples.
func TestSamplerFreshSeed(t *testing.T) {
	cfg := SamplerConfig{Temperature: 1, TopP: 1, RepeatPenalty: 1}
	logits := []float32{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}
	draw := func(s *Sampler) []int32 {
		var out []int32
		for i := 0; i < 50; i++ {
			out = append(out, s.Sample(logits, nil, -1))
		}
		return out
	}
	a, b := NewSampler(cfg, 8), NewSampler(cfg, 8)
	if a.Seed() == 0 || a.Seed() == b.Seed() {
		t.Fatalf("fresh seeds %d and %d", a.Seed(), b.Seed())
	}
	first := draw(a)
	if slices.Equal(first, draw(b)) {
		t.Error("two fresh samplers gave the same 50 tokens")
	}
	cfg.Seed = a.Seed()
	again := NewSampler(cfg, 8)
	if again.Seed() != a.Seed() || !slices.Equal(draw(again), first) {
		t.Error("the drawn seed did not reproduce the samples")
	}
}
