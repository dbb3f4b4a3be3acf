package golden

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// Opener prepares a test model on the backend under test, failing t when
// it cannot. CheckBackend closes the backend before the model.
type Opener func(t *testing.T, m *engine.Model) engine.Backend

// CheckBackend is the conformance check of the engine.Backend contract,
// the one call every backend's tests make. For every test model it checks
// the golden prompt logits, greedy decoding with incremental against full
// recompute (CheckGreedy) and a KV export/import round trip; on the first
// model also the golden chat prompt, the calls every backend must refuse,
// and Close of a cache and of the backend. Every model is held to Float.
func CheckBackend(t *testing.T, open Opener) {
	CheckBackendWithin(t, Models, open, func(*engine.Model) Numerics { return Float })
}

// CheckBackendWithin is CheckBackend over the given test models, with the
// tolerances that numerics gives for each: a backend whose arithmetic is
// not f32 on some weights (int8 activations for quantised ones) says so
// here.
func CheckBackendWithin(t *testing.T, models []string, open Opener, numerics func(*engine.Model) Numerics) {
	for i, name := range models {
		t.Run(name, func(t *testing.T) {
			s := setup(t, name, open)
			s.n = numerics(s.m)
			t.Run("prompt logits", s.promptLogits)
			t.Run("greedy", func(t *testing.T) { CheckGreedy(t, s.b, func() engine.Cache { return s.cache(t) }, s.g, s.vocab, s.n) })
			t.Run("KV round trip", s.kvRoundTrip)
			if i == 0 {
				t.Run("chat prompt", s.chatPrompt)
				t.Run("refused calls", s.refusedCalls)
				t.Run("close", s.close) // last: it closes the backend
			}
		})
	}
}

// subject is one test model on the backend under test.
type subject struct {
	g     *Golden
	m     *engine.Model
	b     engine.Backend
	vocab int
	n     Numerics
}

func setup(t *testing.T, name string, open Opener) *subject {
	t.Helper()
	g, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(ModelDir(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := open(t, m)
	t.Cleanup(func() { b.Close() }) // after the close check: a second Close
	return &subject{g: g, m: m, b: b, vocab: m.Config.VocabSize}
}

// cache is a new cache of the model's whole window, closed when t ends.
func (s *subject) cache(t *testing.T) engine.Cache {
	t.Helper()
	c, err := s.b.NewCache(s.m.Config.MaxPositionEmbeddings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *subject) forward(t *testing.T, c engine.Cache, tokens []int32, logits []float32) {
	t.Helper()
	if err := s.b.Forward(c, tokens, logits); err != nil {
		t.Fatal(err)
	}
}

func (s *subject) promptLogits(t *testing.T) {
	ids := s.g.Prompt.IDs
	logits := make([]float32, len(ids)*s.vocab)
	s.forward(t, s.cache(t), ids, logits)
	var worst float64
	for p := range ids {
		d := MaxDiff(logits[p*s.vocab:(p+1)*s.vocab], s.g.PromptLogits[p])
		if d > s.n.Logit {
			t.Errorf("position %d: max |Δlogit| = %.2g > %g", p, d, s.n.Logit)
		}
		worst = max(worst, d)
	}
	t.Logf("max |Δlogit| over %d positions: %.2g", len(ids), worst)
}

func (s *subject) chatPrompt(t *testing.T) {
	logits := make([]float32, s.vocab)
	s.forward(t, s.cache(t), s.g.Chat.IDs, logits)
	CheckTop5(t, logits, s.g.Chat.NextTokenTop5, s.n.Logit)
}

// kvRoundTrip exports the cache after the prompt, imports it into a new
// cache and checks that both continue alike; states that do not fit are
// refused without touching the cache.
func (s *subject) kvRoundTrip(t *testing.T) {
	cfg := s.m.Config
	ids := s.g.Prompt.IDs
	c := s.cache(t)
	s.forward(t, c, ids, make([]float32, s.vocab))
	st, err := c.Export()
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateKV(st, c.Window()); err != nil {
		t.Fatalf("the exported state does not validate: %v", err)
	}
	if st.Len != len(ids) || st.KVHeads != cfg.NumKeyValueHeads || st.HeadDim != cfg.HeadDim || len(st.K) != cfg.NumHiddenLayers {
		t.Fatalf("exported %d positions, %d heads of %d, %d layers; want %d, %d, %d, %d",
			st.Len, st.KVHeads, st.HeadDim, len(st.K), len(ids), cfg.NumKeyValueHeads, cfg.HeadDim, cfg.NumHiddenLayers)
	}
	restored := s.cache(t)
	if err := restored.Import(st); err != nil {
		t.Fatal(err)
	}
	if restored.Len() != len(ids) {
		t.Fatalf("imported cache holds %d positions, want %d", restored.Len(), len(ids))
	}
	a, b := make([]float32, s.vocab), make([]float32, s.vocab)
	next := []int32{s.g.Greedy.Tokens[0]}
	s.forward(t, c, next, a)
	s.forward(t, restored, next, b)
	if d := MaxDiff(a, b); d > IncrementalTol {
		t.Errorf("continuing from an imported cache differs by %.2g", d)
	}

	short := *st
	short.K = short.K[:len(short.K)-1]
	small, err := s.b.NewCache(len(ids) - 1)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	for _, tc := range []struct {
		reason string
		c      engine.Cache
		s      *engine.KVState
		want   string
	}{
		{"a state with a layer missing", restored, &short, "layers"},
		{"a state longer than the cache's window", small, st, fmt.Sprintf("holds %d positions, the context window is %d", len(ids), len(ids)-1)},
	} {
		before := tc.c.Len()
		if err := tc.c.Import(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) || tc.c.Len() != before {
			t.Errorf("%s: Import = %v (Len %d, was %d); want an error saying %q and no change", tc.reason, err, tc.c.Len(), before, tc.want)
		}
	}
}

// foreignCache is a cache that no backend made.
type foreignCache struct{ engine.Cache }

// refusedCalls checks the calls every backend refuses, leaving the cache
// as it was.
func (s *subject) refusedCalls(t *testing.T) {
	vocab := s.vocab
	small, err := s.b.NewCache(4)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	var full *engine.ContextFullError
	if err := s.b.Forward(small, []int32{1, 2, 3, 4, 5}, make([]float32, vocab)); !errors.As(err, &full) || small.Len() != 0 {
		t.Errorf("5 tokens in a window of 4: %v, Len %d; want a ContextFullError and no change", err, small.Len())
	}
	for _, tc := range []struct {
		reason string
		tokens []int32
		logits int
		want   string
	}{
		{"a logits buffer of neither size", []int32{1, 2}, vocab + 1, "logits buffer"},
		{"a logits buffer too small for one token", []int32{1}, 3, "logits buffer"},
		{"a token outside the vocabulary names config.json", []int32{int32(vocab)}, vocab,
			fmt.Sprintf("outside the vocabulary of %d (vocab_size in %s)", vocab, filepath.Join(s.m.Dir, "config.json"))},
		{"a negative token id", []int32{-1}, vocab, "outside the vocabulary"},
	} {
		c := s.cache(t)
		if err := s.b.Forward(c, tc.tokens, make([]float32, tc.logits)); err == nil || !strings.Contains(err.Error(), tc.want) || c.Len() != 0 {
			t.Errorf("%s: %v, Len %d; want an error saying %q and no change", tc.reason, err, c.Len(), tc.want)
		}
	}
	if err := s.b.Forward(foreignCache{}, []int32{1}, make([]float32, vocab)); err == nil {
		t.Error("a cache the backend did not make was accepted")
	}
	for _, w := range []int{0, s.m.Config.MaxPositionEmbeddings + 1} {
		if c, err := s.b.NewCache(w); err == nil {
			c.Close()
			t.Errorf("a window of %d (the model's is %d) was accepted", w, s.m.Config.MaxPositionEmbeddings)
		}
	}
}

// close checks that Close of a cache and of the backend can be repeated
// and that using either afterwards panics with a message that says so.
func (s *subject) close(t *testing.T) {
	logits := make([]float32, s.vocab)
	c := s.cache(t)
	s.forward(t, c, []int32{1, 2, 3}, logits)
	for i := range 2 {
		if err := c.Close(); err != nil {
			t.Errorf("cache Close #%d: %v", i+1, err)
		}
	}
	MustPanic(t, "closed cache", func() { s.b.Forward(c, []int32{1}, logits) })
	MustPanic(t, "closed cache", func() { c.Export() })

	kept := s.cache(t)
	for i := range 2 {
		if err := s.b.Close(); err != nil {
			t.Errorf("backend Close #%d: %v", i+1, err)
		}
	}
	MustPanic(t, "closed backend", func() { s.b.Forward(kept, []int32{1}, logits) })
}

// MustPanic checks that f panics with a string containing want.
func MustPanic(t testing.TB, want string, f func()) {
	t.Helper()
	defer func() {
		p := recover()
		if s, _ := p.(string); !strings.Contains(s, want) {
			t.Errorf("panic %v, want one saying %q", p, want)
		}
	}()
	f()
}
