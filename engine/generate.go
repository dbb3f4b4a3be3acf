package engine

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Sequence is one conversation's model state: the tokens processed so far
// and the KV cache that holds them.
type Sequence struct {
	Tokens []int32
	Cache  Cache
}

// Hook sees every step of a reply and may restrict what comes next: the
// controller's seat in the decode loop. A step is Begin, the forward pass,
// then End; Begin must return at once and do its work concurrently with the
// forward pass (its input is only the tokens before the step).
type Hook interface {
	// Begin starts the work for the next step. tokens is the whole sequence
	// so far; it is valid until End returns and must not be modified.
	Begin(tokens []int32)
	// End waits for that work and says what the loop should do. logits
	// is the step's, which it must not change: a hook restricts the next
	// token through the Directive's Allowed or Mask, which hold whether
	// or not the step also takes back or forces tokens. When the backend
	// samples on its device (DeviceSampler) the logits stay there and
	// logits is not written: only its length, the vocabulary's, holds.
	End(logits []float32) Directive
}

// ReplyHook is a Hook that is told, before each reply, the position of
// the reply's first token (a controller uses it to tell the prompt from
// the reply) and the most tokens the reply may keep: MaxTokens, or the
// room left in the context window (a controller bounds its own work by
// it: each take-back lowers the count MaxTokens is checked against).
type ReplyHook interface {
	Hook
	StartReply(start, limit int)
}

// IdleHook is a Hook that can say it has no work of its own to run beside
// the model (a controller host with no controller on): the loop then
// prefills the whole prompt, as it does without a hook, and the hook's
// first step sees the prompt's last logits without a forward pass beside
// it.
type IdleHook interface {
	Hook
	Idle() bool
}

// Directive is a hook's answer for one step. The loop applies it in field
// order: take back, force, stop, then sample the next token (among
// Allowed or Mask, at Temperature), all within the step: after a take-back
// or forced tokens the loop feeds the model what changed and samples
// without asking the hook again.
type Directive struct {
	// Backtrack takes back this many tokens of the reply.
	Backtrack int
	// Force appends these tokens without sampling (fast-forward); they
	// count against MaxTokens and the window, and those past the limit
	// are dropped (the reply ends there).
	Force []int32
	// Stop ends the reply (after any forced tokens) instead of sampling.
	Stop bool
	// Allowed, when not nil, is the only tokens that may be sampled: a
	// sparse mask that spares the hook from masking the whole vocabulary.
	// An empty, non-nil list ends the reply.
	Allowed []int32
	// Mask, when not nil, is a bitset over the vocabulary (bit t%32 of
	// word t/32): only tokens whose bit is set may be sampled. The
	// sampler reads it instead of the hook writing -Inf over the logits;
	// it must stay valid until the next Begin. When Allowed is set too,
	// both must allow the same tokens: the host's sampler reads the list,
	// a backend that samples on its device (DeviceSampler) the bitset.
	Mask []uint32
	// MaskPages, when not nil, is the whole host memory pages (aligned
	// to the page size, a whole number of them) that hold Mask, in
	// memory that stays mapped and unchanged until the next Begin: a
	// DeviceSampler may map them as a device buffer instead of copying
	// Mask.
	MaskPages []byte
	// Temperature, when 0 or more, overrides the sampler's for this step.
	Temperature float64
	// Candidates is how many tokens the hook allowed at this step, for
	// display (0: it did not restrict the step).
	Candidates int
}

// Event is one change to the reply, streamed to the caller as it happens.
type Event struct {
	// Backtrack is the number of reply tokens taken back before Token.
	Backtrack int
	// Token is the token appended, or -1 when the event only takes back.
	Token int32
	// Forced marks a token appended by the hook rather than sampled.
	Forced bool
	// Candidates is how many tokens the hook allowed at the step that
	// sampled Token (0: unrestricted).
	Candidates int
	// Overrode says the hook kept the model from its top token (the
	// largest logit) at this step, by forcing Token or by a restriction
	// that left the top token out; Wanted is that token.
	Overrode bool
	Wanted   int32
}

// permits says whether the directive's restriction lets token t be
// sampled.
func (d *Directive) permits(t int32) bool {
	if d.Allowed != nil {
		return slices.Contains(d.Allowed, t)
	}
	w := int(t) / 32
	return w < len(d.Mask) && d.Mask[w]>>(t%32)&1 == 1
}

// StopReason says why a reply ended.
type StopReason string

// The reasons a reply ends.
const (
	StopEOS       StopReason = "eos"
	StopMaxTokens StopReason = "max_tokens"
	StopHook      StopReason = "controller"
	StopCancelled StopReason = "cancelled"
)

// Stats measures one call to Generate.
type Stats struct {
	PromptTokens   int
	PromptDuration time.Duration
	GenTokens      int
	GenDuration    time.Duration
	// TakenBack counts reply tokens a hook took back: decoded, then
	// dropped (GenTokens does not hold them; GenRate does).
	TakenBack int
	Reason    StopReason
	// HookFirst is how long the first step waited for the hook (a
	// controller's start-up); HookWait how long the later steps waited in
	// all, beyond their forward passes: the controller's added latency.
	HookFirst, HookWait time.Duration
	// Seed is the sampler's seed (Sampler.Seed): with the same settings
	// and prompt, giving it as the seed reproduces the reply.
	Seed uint64
	// Overrides counts the tokens the hook chose over the model's top
	// token (Event.Overrode), taken-back ones included.
	Overrides int
}

// PromptRate is prefill speed in tokens per second.
func (s Stats) PromptRate() float64 { return rate(s.PromptTokens, s.PromptDuration) }

// GenRate is decode speed in tokens per second, counting the tokens
// taken back too (they were decoded).
func (s Stats) GenRate() float64 { return rate(s.GenTokens+s.TakenBack, s.GenDuration) }

// String is the reply's figures on one line, as the CLI prints them:
// "prompt 43 tokens, 512.0 tok/s · reply 12 tokens, 30.1 tok/s · stop: eos".
func (s Stats) String() string {
	return fmt.Sprintf("prompt %d tokens, %.1f tok/s · reply %d tokens, %.1f tok/s · stop: %s",
		s.PromptTokens, s.PromptRate(), s.GenTokens, s.GenRate(), s.Reason)
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generator runs the decode loop on a backend.
type Generator struct {
	Backend Backend
	Sampler *Sampler
	// Hook, when set, sees every step (a controller).
	Hook Hook
	// StopTokens end the reply (end-of-turn, end-of-text); they are not
	// emitted.
	StopTokens []int32
	// MaxTokens bounds the reply's length, forced tokens included; 0 means
	// until a stop token or the context window is full.
	MaxTokens int
	// PrefillBatch is how many prompt tokens go through the model at once;
	// cancellation is checked between batches. 0 means 256.
	PrefillBatch int

	logits  []float32
	pending []int32       // tokens to feed at the next step
	device  DeviceSampler // the backend, when it samples on its device
	pick    Pick          // the device's step, reused
}

// forward feeds tokens to seq's cache: the logits of the last come to
// the host, or stay on the device when it samples there.
func (g *Generator) forward(c Cache, tokens []int32) error {
	if g.device != nil {
		return g.device.ForwardKeep(c, tokens)
	}
	return g.Backend.Forward(c, tokens, g.logits)
}

// useDevice picks where this call samples: on the backend's device when
// it can, else on the host.
func (g *Generator) useDevice() {
	g.device = nil
	if d, ok := g.Backend.(DeviceSampler); ok && d.SamplesOnDevice() {
		g.device = d
	}
}

// NewGenerator returns a generator with the given sampler and a logits
// buffer for vocab tokens.
func NewGenerator(b Backend, s *Sampler, vocab int) *Generator {
	return &Generator{Backend: b, Sampler: s, logits: make([]float32, vocab), pending: make([]int32, 0, 16)}
}

// Prefill feeds tokens into seq in batches, honouring ctx between batches,
// and leaves the logits of the last token in the generator.
func (g *Generator) Prefill(ctx context.Context, seq *Sequence, tokens []int32) error {
	batch := g.PrefillBatch
	if batch <= 0 {
		batch = 256
	}
	if n := seq.Cache.Len() + len(tokens); n > seq.Cache.Window() {
		return &ContextFullError{Window: seq.Cache.Window(), Have: seq.Cache.Len(), Adding: len(tokens)}
	}
	g.useDevice()
	for len(tokens) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(batch, len(tokens))
		if err := g.forward(seq.Cache, tokens[:n]); err != nil {
			return err
		}
		seq.Tokens = append(seq.Tokens, tokens[:n]...)
		tokens = tokens[n:]
	}
	return nil
}

// Generate adds prompt to seq and produces a reply, calling emit for each
// change to it. It stops at a stop token, MaxTokens, the hook's word, or
// when ctx is cancelled (then it returns ctx's error). Whatever happens,
// seq.Tokens is exactly what seq.Cache holds: the prompt and the reply so
// far, except the tokens emitted at the reply's last step, which were not
// yet fed to the model (a stop token is never emitted). A full context window
// returns *ContextFullError. The per-token path allocates nothing.
func (g *Generator) Generate(ctx context.Context, seq *Sequence, prompt []int32, emit func(Event) error) (Stats, error) {
	r := reply{g: g, seq: seq, emit: emit, st: Stats{PromptTokens: len(prompt), Seed: g.Sampler.Seed()}}
	if len(prompt) == 0 {
		return r.st, fmt.Errorf("generate: empty prompt")
	}
	r.start = time.Now()
	g.useDevice()
	// Room for the whole window up front, so that appending a token never
	// reallocates on the per-token path.
	seq.Tokens = slices.Grow(seq.Tokens, seq.Cache.Window()-len(seq.Tokens))
	// Prefill all but the last prompt token; that one runs as the first
	// step, so that the hook's first step sees the whole prompt and runs
	// concurrently with a forward pass. Without a hook, or with an idle
	// one, nothing runs beside it, and the whole prompt goes in one
	// prefill: a forward pass fewer before the first token (one pass over
	// the weights, most of a short prompt's time).
	last := len(prompt) - 1
	if ih, ok := g.Hook.(IdleHook); g.Hook == nil || ok && ih.Idle() {
		last = len(prompt)
	}
	if err := g.Prefill(ctx, seq, prompt[:last]); err != nil {
		return r.st, err
	}
	pending := append(g.pending[:0], prompt[last:]...)
	r.replyStart = len(seq.Tokens) + len(pending)
	// The most tokens the reply may keep, forced ones included: every
	// reply token but the last is fed to the model.
	r.limit = seq.Cache.Window() - r.replyStart + 1
	if g.MaxTokens > 0 {
		r.limit = min(r.limit, g.MaxTokens)
	}
	if rh, ok := g.Hook.(ReplyHook); ok {
		rh.StartReply(r.replyStart, r.limit)
	}
	for {
		if err := ctx.Err(); err != nil {
			return r.finish(StopCancelled, err)
		}
		d, err := r.step(pending)
		if err != nil {
			return r.finish("", err)
		}
		back, force, err := r.rewrite(d)
		if err != nil {
			return r.finish("", err)
		}
		if d.Stop && len(force) == len(d.Force) {
			return r.finish(StopHook, nil)
		}
		if r.st.GenTokens >= r.limit {
			return r.atLimit()
		}
		if len(force) > 0 || back > 0 {
			if err := r.refeed(back, force); err != nil {
				return r.finish("", err)
			}
		}
		tok, stop, err := r.sample(&d)
		switch {
		case err != nil:
			return r.finish("", err)
		case stop:
			return r.finish(StopEOS, nil)
		}
		if r.st.GenTokens >= r.limit {
			return r.atLimit()
		}
		pending = append(g.pending[:0], tok)
	}
}

// nonFiniteError says that the logits computed at position pos are NaN
// or +Inf (read again to say which: this is the path of a broken model,
// not the per-token one).
func nonFiniteError(logits []float32, pos int) error {
	kind := "+Inf"
	if slices.ContainsFunc(logits, func(l float32) bool { return l != l }) {
		kind = "NaN"
	}
	return fmt.Errorf("the model produced %s logits at position %d (broken weights, or a backend fault)", kind, pos)
}

// truncate shortens seq, tokens and cache, to n positions.
func (g *Generator) truncate(seq *Sequence, n int) {
	seq.Tokens = seq.Tokens[:n]
	seq.Cache.Truncate(n)
}
