package golden

import (
	"math"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// Tolerances from the test data's README for f32 arithmetic over the
// stored weights against the float64 reference.
const (
	LogitTol       = 1e-3
	IncrementalTol = 1e-4
)

// Numerics are the tolerances a backend's arithmetic is held to on one
// test model.
type Numerics struct {
	// Logit bounds |Δ| of logits against the golden ones.
	Logit float64
	// Incremental bounds |Δ| between decoding one token at a time and a
	// full recompute of the same tokens.
	Incremental float64
	// Tie lets a greedy step choose another of the golden top five when
	// its golden logit is within Tie of the top one; the check then goes
	// on from the golden token, as a cross-check tool does.
	Tie float64
}

// Float is what f32 arithmetic over the stored weights is held to.
var Float = Numerics{Logit: LogitTol, Incremental: IncrementalTol}

// MaxDiff is the largest absolute difference of two equal-length slices
// (+Inf when the lengths differ).
func MaxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// CheckGreedy is the conformance check every backend runs: it decodes the
// 24 golden tokens one at a time through a cache from newCache, checking
// each token (up to n.Tie), each step's top-5 logits and the final logits,
// then runs the whole sequence in one batch and checks incremental
// decoding against the full recompute.
func CheckGreedy(t testing.TB, b engine.Backend, newCache func() engine.Cache, g *Golden, vocab int, n Numerics) {
	t.Helper()
	c := newCache()
	logits := make([]float32, vocab)
	if err := b.Forward(c, g.Prompt.IDs, logits); err != nil {
		t.Fatal(err)
	}
	var incremental [][]float32
	for k, want := range g.Greedy.Tokens {
		incremental = append(incremental, append([]float32(nil), logits...))
		top5 := g.Greedy.Steps[k].Top5
		CheckTop5(t, logits, top5, n.Logit)
		if got := engine.Argmax(logits); got != want && !tied(top5, got, n.Tie) {
			t.Fatalf("step %d: greedy token %d, want %d", k, got, want)
		}
		if err := b.Forward(c, []int32{want}, logits); err != nil {
			t.Fatal(err)
		}
	}
	if d := MaxDiff(logits, g.Greedy.LogitsAfterLastToken); d > n.Logit {
		t.Errorf("logits after the last token: max |Δ| = %.2g", d)
	}
	incremental = append(incremental, logits)

	all := append(append([]int32(nil), g.Prompt.IDs...), g.Greedy.Tokens...)
	full := make([]float32, len(all)*vocab)
	if err := b.Forward(newCache(), all, full); err != nil {
		t.Fatal(err)
	}
	p0 := len(g.Prompt.IDs) - 1
	for k, inc := range incremental {
		if d := MaxDiff(inc, full[(p0+k)*vocab:(p0+k+1)*vocab]); d > n.Incremental {
			t.Errorf("step %d: incremental vs full recompute max |Δ| = %.2g > %g", k, d, n.Incremental)
		}
	}
}

// tied reports whether id is one of the golden top five whose logit is
// within tie of the top one.
func tied(top5 [][2]float64, id int32, tie float64) bool {
	for _, top := range top5 {
		if int32(top[0]) == id {
			return top5[0][1]-top[1] < tie
		}
	}
	return false
}

// CheckTop5 checks the listed [id, logit] pairs against logits within tol.
func CheckTop5(t testing.TB, logits []float32, top5 [][2]float64, tol float64) {
	t.Helper()
	for _, top := range top5 {
		if d := math.Abs(float64(logits[int(top[0])]) - top[1]); d > tol {
			t.Errorf("logit of %d off by %.2g", int(top[0]), d)
		}
	}
}
