package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

type setup struct {
	g     *golden.Golden
	m     *engine.Model
	b     *cpu.Backend
	vocab int
}

func newSetup(t testing.TB, name string) *setup {
	t.Helper()
	g, err := golden.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(golden.ModelDir(name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(m, cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); m.Close() })
	return &setup{g, m, b, m.Config.VocabSize}
}

func (s *setup) generator(maxTokens int) *engine.Generator {
	gen := engine.NewGenerator(s.b, engine.NewSampler(engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}, s.vocab), s.vocab)
	gen.MaxTokens = maxTokens
	return gen
}

func (s *setup) sequence(t testing.TB, window int) *engine.Sequence {
	c, err := s.b.NewCache(window)
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Sequence{Cache: c}
}

// collect records the reply that events describe.
func collect(reply *[]int32) func(engine.Event) error {
	return func(e engine.Event) error {
		*reply = (*reply)[:len(*reply)-e.Backtrack]
		if e.Token >= 0 {
			*reply = append(*reply, e.Token)
		}
		return nil
	}
}

func TestGenerateGreedyMatchesGolden(t *testing.T) {
	floatKernels(t)
	for _, name := range golden.Models {
		s := newSetup(t, name)
		var reply []int32
		seq := s.sequence(t, 64)
		st, err := s.generator(24).Generate(context.Background(), seq, s.g.Prompt.IDs, collect(&reply))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(reply, s.g.Greedy.Tokens) {
			t.Errorf("%s: reply %v, want %v", name, reply, s.g.Greedy.Tokens)
		}
		if st.Reason != engine.StopMaxTokens || st.GenTokens != 24 || st.PromptTokens != 13 {
			t.Errorf("%s: stats %+v", name, st)
		}
		// The last token is emitted but not yet in the cache.
		if want := 13 + 23; len(seq.Tokens) != want || seq.Cache.Len() != want {
			t.Errorf("%s: sequence holds %d tokens, cache %d, want %d", name, len(seq.Tokens), seq.Cache.Len(), want)
		}
	}
}

func TestGenerateStopsAtStopToken(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	gen := s.generator(0)
	k := 1
	for slices.Contains(s.g.Greedy.Tokens[:k], s.g.Greedy.Tokens[k]) {
		k++ // the first token that did not occur before
	}
	gen.StopTokens = []int32{s.g.Greedy.Tokens[k]}
	var reply []int32
	st, err := gen.Generate(context.Background(), s.sequence(t, 64), s.g.Prompt.IDs, collect(&reply))
	if err != nil {
		t.Fatal(err)
	}
	if st.Reason != engine.StopEOS || !slices.Equal(reply, s.g.Greedy.Tokens[:k]) {
		t.Errorf("reason %s, reply %v, want eos after %v", st.Reason, reply, s.g.Greedy.Tokens[:k])
	}
}

// scriptHook plays a controller: it records what it saw and answers each
// step from a script.
type scriptHook struct {
	steps  map[int]engine.Directive
	allow  map[int]int32 // step -> the only token allowed
	step   int
	seen   [][]int32
	active bool
}

func (h *scriptHook) Begin(tokens []int32) {
	h.seen = append(h.seen, slices.Clone(tokens))
	h.active = true
}

func (h *scriptHook) End([]float32) engine.Directive {
	defer func() { h.step++; h.active = false }()
	d, ok := h.steps[h.step]
	if !ok {
		d = engine.Directive{Temperature: -1}
	}
	if tok, ok := h.allow[h.step]; ok {
		d.Allowed = []int32{tok}
	}
	return d
}

func TestGenerateHookDirectives(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	hook := &scriptHook{
		allow: map[int]int32{1: 7},
		steps: map[int]engine.Directive{
			3: {Force: []int32{40, 41}, Temperature: -1},
			5: {Backtrack: 2, Temperature: -1},
			8: {Stop: true},
		},
	}
	gen := s.generator(0)
	gen.Hook = hook
	seq := s.sequence(t, 64)
	var reply []int32
	st, err := gen.Generate(context.Background(), seq, s.g.Prompt.IDs, collect(&reply))
	if err != nil {
		t.Fatal(err)
	}
	if st.Reason != engine.StopHook {
		t.Errorf("reason %s, want the hook's stop", st.Reason)
	}
	if reply[1] != 7 {
		t.Errorf("masked step sampled %d, want the only allowed token 7", reply[1])
	}
	// Every Begin saw the sequence as it stood, and the sequence is the
	// prompt plus the reply: forced tokens in, backtracked ones out.
	if !slices.Equal(hook.seen[0], s.g.Prompt.IDs) {
		t.Errorf("first step saw %v, want the prompt", hook.seen[0])
	}
	if want := append(slices.Clone(s.g.Prompt.IDs), reply...); !slices.Equal(seq.Tokens, want) {
		t.Errorf("sequence %v\nwant prompt + reply %v", seq.Tokens, want)
	}
	if seq.Cache.Len() != len(seq.Tokens) {
		t.Errorf("cache holds %d positions, sequence %d tokens", seq.Cache.Len(), len(seq.Tokens))
	}
	// Steps: 0 sampled, 1 masked to 7, 2 sampled, 3 forces 40 41 and
	// samples one more, 4 sampled, 5 takes back two (step 3's sampled
	// token and step 4's) and samples one, 6 and 7 sampled, 8 stops.
	if len(reply) != 8 || reply[3] != 40 || reply[4] != 41 {
		t.Errorf("reply %v: want 8 tokens with forced 40 41 kept at index 3", reply)
	}
	if st.GenTokens != 8 || st.TakenBack != 2 {
		t.Errorf("stats count %d tokens and %d taken back, want 8 and 2", st.GenTokens, st.TakenBack)
	}
	if len(hook.seen) != 9 {
		t.Errorf("the hook had %d steps, want 9: none between forced tokens or a take-back and the next sampled token", len(hook.seen))
	}
	// The KV cache after backtracking equals a fresh run of the same tokens.
	s.checkCacheMatchesRecompute(t, seq)
}

// checkCacheMatchesRecompute feeds one more token on seq's cache and on a
// fresh cache filled with seq.Tokens, and compares the logits.
func (s *setup) checkCacheMatchesRecompute(t *testing.T, seq *engine.Sequence) {
	t.Helper()
	a, b := make([]float32, s.vocab), make([]float32, s.vocab)
	if err := s.b.Forward(seq.Cache, []int32{5}, a); err != nil {
		t.Fatal(err)
	}
	fresh := s.sequence(t, 64)
	if err := s.b.Forward(fresh.Cache, append(slices.Clone(seq.Tokens), 5), b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4 {
			t.Fatalf("logit %d: cache %g vs recompute %g", i, a[i], b[i])
		}
	}
}

// TestGenerateForceThenStop checks the order of a directive's fields:
// forced tokens are emitted before the stop, and a sparse Allowed list
// restricts sampling.
func TestGenerateForceThenStop(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	gen := s.generator(0)
	gen.Hook = &scriptHook{steps: map[int]engine.Directive{
		0: {Allowed: []int32{11, 12}, Temperature: -1},
		1: {Force: []int32{30, 31}, Stop: true},
	}}
	var reply []int32
	st, err := gen.Generate(context.Background(), s.sequence(t, 64), s.g.Prompt.IDs, collect(&reply))
	if err != nil {
		t.Fatal(err)
	}
	if st.Reason != engine.StopHook || len(reply) != 3 || (reply[0] != 11 && reply[0] != 12) || reply[1] != 30 || reply[2] != 31 {
		t.Errorf("reason %s, reply %v: want one of 11/12, then 30 31, then stop", st.Reason, reply)
	}
}

func TestGenerateCancelKeepsSequenceConsistent(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	seq := s.sequence(t, 64)
	_, err := s.generator(0).Generate(ctx, seq, s.g.Prompt.IDs, func(engine.Event) error {
		if n++; n == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if seq.Cache.Len() != len(seq.Tokens) {
		t.Errorf("cache %d vs tokens %d after cancel", seq.Cache.Len(), len(seq.Tokens))
	}
	s.checkCacheMatchesRecompute(t, seq)
}

func TestGenerateContextFull(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	var full *engine.ContextFullError
	_, err := s.generator(0).Generate(context.Background(), s.sequence(t, 8), s.g.Prompt.IDs, collect(new([]int32)))
	if !errors.As(err, &full) || full.Window != 8 {
		t.Errorf("prompt longer than the window: err = %v", err)
	}
	seq := s.sequence(t, 16)
	var reply []int32
	_, err = s.generator(0).Generate(context.Background(), seq, s.g.Prompt.IDs, collect(&reply))
	if !errors.As(err, &full) {
		t.Fatalf("err = %v, want *ContextFullError", err)
	}
	if seq.Cache.Len() != 16 || len(reply) != 4 {
		t.Errorf("window 16: cache %d, reply %d tokens; want the window filled and 4 tokens", seq.Cache.Len(), len(reply))
	}
}

// TestGenerateAllocatesNothingPerToken compares a short and a long reply:
// any allocation on the per-token path would make the long one allocate
// more.
func TestGenerateAllocatesNothingPerToken(t *testing.T) {
	s := newSetup(t, "tiny-mlx-q4")
	allocs := func(n int) float64 {
		gen := s.generator(n)
		gen.Hook = &nopHook{}
		return testing.AllocsPerRun(5, func() {
			seq := s.sequence(t, 64)
			if _, err := gen.Generate(context.Background(), seq, s.g.Prompt.IDs, func(engine.Event) error { return nil }); err != nil {
				t.Fatal(err)
			}
		})
	}
	short, long := allocs(2), allocs(20)
	if long > short {
		t.Errorf("a 20-token reply allocated %v times, a 2-token one %v: the decode step allocates", long, short)
	}
}

type nopHook struct{}

func (nopHook) Begin([]int32)                  {}
func (nopHook) End([]float32) engine.Directive { return engine.Directive{Temperature: -1} }

// poisonBackend passes through to a real backend but, from its first
// decode step on (a one-token Forward after the prompt), writes value
// over the logits of every token or only of token one.
type poisonBackend struct {
	engine.Backend
	value float32
	all   bool
	after int // one-token forwards left before the poison
}

func (p *poisonBackend) Forward(c engine.Cache, tokens []int32, logits []float32) error {
	err := p.Backend.Forward(c, tokens, logits)
	if len(tokens) == 1 {
		if p.after > 0 {
			p.after--
		} else if p.all {
			for i := range logits {
				logits[i] = p.value
			}
		} else {
			logits[1] = p.value
		}
	}
	return err
}

// TestGenerateNonFiniteLogits: broken weights give NaN or +Inf logits;
// the reply fails with an error that says so (it used to end at once as
// "eos", or pick the +Inf token), while a NaN limited to one token is
// only never picked.
func TestGenerateNonFiniteLogits(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	// Without a hook the whole prompt is one prefill: the first one-token
	// forward is the first reply token's, and the third poisoned one
	// computes the logits after the third reply token.
	start := len(s.g.Prompt.IDs) - 1
	cases := []struct {
		reason string
		value  float32
		all    bool
		temp   float64
		want   string
	}{
		{"every logit NaN, greedy", nan, true, 0, fmt.Sprintf("the model produced NaN logits at position %d (broken weights, or a backend fault)", start+3)},
		{"every logit NaN, sampled", nan, true, 1, fmt.Sprintf("the model produced NaN logits at position %d (broken weights, or a backend fault)", start+3)},
		{"one logit +Inf", inf, false, 0, fmt.Sprintf("the model produced +Inf logits at position %d (broken weights, or a backend fault)", start+3)},
		{"one logit NaN: never picked, no error", nan, false, 1, ""},
	}
	for _, c := range cases {
		gen := engine.NewGenerator(&poisonBackend{Backend: s.b, value: c.value, all: c.all, after: 2},
			engine.NewSampler(engine.SamplerConfig{Temperature: c.temp, TopP: 1, RepeatPenalty: 1}, s.vocab), s.vocab)
		gen.MaxTokens = 8
		var reply []int32
		st, err := gen.Generate(context.Background(), s.sequence(t, 64), s.g.Prompt.IDs, collect(&reply))
		switch {
		case c.want == "" && (err != nil || len(reply) != 8 || slices.Contains(reply[3:], 1)): // the first 3 are unpoisoned: token 1 may be drawn there
			t.Errorf("%s: reply %v, %v; want 8 tokens without token 1", c.reason, reply, err)
		case c.want != "" && (err == nil || err.Error() != c.want || len(reply) != 3):
			t.Errorf("%s: reply %v (%s), err %v; want 3 tokens then %q", c.reason, reply, st.Reason, err, c.want)
		}
	}
}

// replyHook records what StartReply was told.
type replyHook struct {
	nopHook
	start, limit int
}

func (h *replyHook) StartReply(start, limit int) { h.start, h.limit = start, limit }

// TestGenerateTellsTheReplyLimit: a ReplyHook learns where the reply
// starts and the most tokens it may keep (MaxTokens, or the room left in
// the window), which a controller bounds its own work by.
func TestGenerateTellsTheReplyLimit(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	n := len(s.g.Prompt.IDs)
	for _, c := range []struct {
		reason            string
		maxTokens, window int
		want              int
	}{
		{"MaxTokens", 5, 64, 5},
		{"no MaxTokens: the room in the window", 0, 64, 64 - n + 1},
		{"MaxTokens past the window: the room in the window", 100, 32, 32 - n + 1},
	} {
		h := &replyHook{}
		gen := s.generator(c.maxTokens)
		gen.Hook = h
		gen.Generate(context.Background(), s.sequence(t, c.window), s.g.Prompt.IDs, collect(new([]int32)))
		if h.start != n || h.limit != c.want {
			t.Errorf("%s: StartReply(%d, %d), want (%d, %d)", c.reason, h.start, h.limit, n, c.want)
		}
	}
}

// TestGenerateForcedTokensWithinLimits: forced tokens count against
// MaxTokens and the context window like sampled ones; the reply stops
// at the limit, and the sequence still matches the cache.
func TestGenerateForcedTokensWithinLimits(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	n := len(s.g.Prompt.IDs)
	force := []int32{40, 41, 42, 43, 44, 45, 46, 47}
	for _, c := range []struct {
		reason            string
		maxTokens, window int
		want              int
		full              bool
	}{
		{"MaxTokens 3, 8 forced", 3, 64, 3, false},
		{"MaxTokens 8, 8 forced: the limit is reached exactly", 8, 64, 8, false},
		{"room for 5 in the window, 8 forced", 0, n + 4, 5, true},
	} {
		gen := s.generator(c.maxTokens)
		gen.Hook = &scriptHook{steps: map[int]engine.Directive{0: {Force: force, Temperature: -1}}}
		seq := s.sequence(t, c.window)
		var reply []int32
		st, err := gen.Generate(context.Background(), seq, s.g.Prompt.IDs, collect(&reply))
		var full *engine.ContextFullError
		switch {
		case c.full && !errors.As(err, &full), !c.full && (err != nil || st.Reason != engine.StopMaxTokens):
			t.Errorf("%s: %v (%s), want full=%v", c.reason, err, st.Reason, c.full)
		case !slices.Equal(reply, force[:c.want]) || st.GenTokens != c.want:
			t.Errorf("%s: reply %v (%d counted), want %v", c.reason, reply, st.GenTokens, force[:c.want])
		case seq.Cache.Len() != len(seq.Tokens) || len(seq.Tokens) > c.window:
			t.Errorf("%s: cache %d, sequence %d, window %d", c.reason, seq.Cache.Len(), len(seq.Tokens), c.window)
		}
	}
}

func TestStatsString(t *testing.T) {
	st := engine.Stats{PromptTokens: 40, PromptDuration: 2 * time.Second, GenTokens: 9, TakenBack: 1, GenDuration: time.Second, Reason: engine.StopEOS}
	if got, want := st.String(), "prompt 40 tokens, 20.0 tok/s · reply 9 tokens, 10.0 tok/s · stop: eos"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// floatKernels runs the rest of t on the CPU's float kernels (the
// backends it opens read DRIFTWOOD_KERNELS): the golden
// continuations are the float reference's, which int8 activations follow
// only up to near-ties (engine/cpu holds them to that).
func floatKernels(t *testing.T) { t.Setenv("DRIFTWOOD_KERNELS", "float") }

// TestGenerateOverrides: a token is marked overridden, with the model's
// top token, exactly when the hook forced another or restricted the step
// so that the top token was left out.
func TestGenerateOverrides(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	g0, g1 := s.g.Greedy.Tokens[0], s.g.Greedy.Tokens[1]
	other := func(tok int32) int32 { return (tok + 1) % int32(s.vocab) }
	only := func(tok int32) []uint32 {
		m := make([]uint32, (s.vocab+31)/32)
		m[tok/32] |= 1 << (tok % 32)
		return m
	}
	all := make([]uint32, (s.vocab+31)/32)
	for i := range all {
		all[i] = ^uint32(0)
	}
	for _, tc := range []struct {
		name  string
		steps map[int]engine.Directive
		want  []int32 // per event: the wanted token, or -1 for none
	}{
		{"free", nil, []int32{-1, -1}},
		{"allowed keeps the top, then leaves it out", map[int]engine.Directive{0: {Allowed: []int32{g0, 3}, Temperature: -1}, 1: {Allowed: []int32{other(g1)}, Temperature: -1}}, []int32{-1, g1}},
		{"mask of all, then of another", map[int]engine.Directive{0: {Mask: all, Temperature: -1}, 1: {Mask: only(other(g1)), Temperature: -1}}, []int32{-1, g1}},
		{"forcing the top", map[int]engine.Directive{0: {Force: []int32{g0}, Stop: true}}, []int32{-1}},
		{"forcing another", map[int]engine.Directive{0: {Force: []int32{other(g0), 5}, Stop: true}}, []int32{g0, -1}},
	} {
		gen := s.generator(2)
		gen.Hook = &scriptHook{steps: tc.steps}
		var got []int32
		st, err := gen.Generate(context.Background(), s.sequence(t, 64), s.g.Prompt.IDs, func(e engine.Event) error {
			w := int32(-1)
			if e.Overrode {
				w = e.Wanted
			}
			got = append(got, w)
			return nil
		})
		overrides := 0
		for _, w := range tc.want {
			if w >= 0 {
				overrides++
			}
		}
		if err != nil || !slices.Equal(got, tc.want) || st.Overrides != overrides {
			t.Errorf("%s: wanted tokens %v, %d overrides (%v); want %v", tc.name, got, st.Overrides, err, tc.want)
		}
	}
}

// BenchmarkTopToken is what telling an override costs a restricted step:
// one pass for the largest of a Llama 3-sized vocabulary's logits
// (compare with a decode step's tens of milliseconds).
func BenchmarkTopToken(b *testing.B) {
	logits := make([]float32, 128256)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	for b.Loop() {
		engine.Argmax(logits)
	}
}

// countBackend counts the forward passes through a real backend.
type countBackend struct {
	engine.Backend
	passes []int // tokens of each Forward
}

func (c *countBackend) Forward(cache engine.Cache, tokens []int32, logits []float32) error {
	c.passes = append(c.passes, len(tokens))
	return c.Backend.Forward(cache, tokens, logits)
}

// idleHook is a scriptHook that says whether it is idle.
type idleHook struct {
	scriptHook
	idle bool
}

func (h *idleHook) Idle() bool { return h.idle }

// TestGeneratePromptPasses: without a hook, or with an idle one, the
// whole prompt is one prefill and the first token comes from its logits;
// with a busy hook, the last prompt token runs as the first step, beside
// the hook's work. The reply is the same either way, and a hook's first
// step sees the whole prompt.
func TestGeneratePromptPasses(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	n := len(s.g.Prompt.IDs)
	idle, busy := &idleHook{idle: true}, &idleHook{}
	hooks := []engine.Hook{nil, idle, busy, &scriptHook{}}
	replies := make([][]int32, len(hooks))
	for i, hook := range hooks {
		cb := &countBackend{Backend: s.b}
		gen := s.generator(4)
		gen.Backend, gen.Hook = cb, hook
		if _, err := gen.Generate(context.Background(), s.sequence(t, 64), s.g.Prompt.IDs, collect(&replies[i])); err != nil {
			t.Fatal(err)
		}
		want := []int{n, 1, 1, 1}
		if i >= 2 {
			want = []int{n - 1, 1, 1, 1, 1}
		}
		if !slices.Equal(cb.passes, want) {
			t.Errorf("hook %d: forward passes of %v tokens, want %v", i, cb.passes, want)
		}
		if !slices.Equal(replies[i], replies[0]) || len(replies[i]) != 4 {
			t.Errorf("hook %d: reply %v, without a hook %v", i, replies[i], replies[0])
		}
	}
	for _, h := range []*idleHook{idle, busy} {
		if len(h.seen) == 0 || !slices.Equal(h.seen[0], s.g.Prompt.IDs) {
			t.Errorf("idle %v: the hook's first step saw %v, want the prompt", h.idle, h.seen)
		}
	}
}
