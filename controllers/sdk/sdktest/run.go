package sdktest

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// Options tune one reply.
type Options struct {
	// Seed seeds the sampler.
	Seed uint64
	// MaxTokens ends the reply at this length (default 256).
	MaxTokens int
	// EndBias is the probability of sampling an end token whenever one
	// is allowed; otherwise end tokens are as likely as any other.
	EndBias float64
	// Prefer, when not nil, marks tokens sampled with probability
	// PreferBias whenever some are allowed (to steer uniform sampling
	// towards, say, closing quotes and brackets).
	Prefer     func(id int32) bool
	PreferBias float64
	// Prompt is passed to Begin.
	Prompt []int32
	// Prefix holds reply tokens produced before the controller was
	// loaded (a hot swap); the first step receives them.
	Prefix []int32
}

// Why a reply ended.
const (
	EndStop      = "stop"       // the controller set STOP
	EndFail      = "fail"       // the controller set FAIL: it could not go on
	EndToken     = "end token"  // an end token was sampled
	EndEmptyMask = "empty mask" // the mask allowed nothing
	EndMaxTokens = "max tokens" // the reply reached MaxTokens
)

// Reply is the outcome of one reply.
type Reply struct {
	Tokens []int32 // the reply's tokens, end token excluded
	Text   []byte  // their bytes
	End    string  // why the reply ended: EndStop, EndToken...
	Steps  int     // calls to Step
	Forced int     // tokens appended by FORCE
	Back   int     // tokens taken back by BACKTRACK
	// Appended holds the tokens each step received, for replaying the
	// reply (see Replay).
	Appended [][]int32
}

// Run is NewSession followed by one Reply.
func Run(c sdk.Controller, arg string, v *sdk.Vocab, h *Host, opt Options) (Reply, error) {
	s, err := NewSession(c, arg, v, h)
	if err != nil {
		return Reply{}, err
	}
	return s.Reply(opt)
}

// Reply runs one reply: Begin, then Step until the reply ends. Each step
// applies the result as the ABI says: take back, fail, force, stop, else sample
// uniformly among the allowed tokens (all ordinary tokens and the end
// tokens when there is no mask).
func (s *Session) Reply(opt Options) (Reply, error) {
	if err := s.C.Begin(opt.Prompt); err != nil {
		return Reply{}, fmt.Errorf("begin: %w", err)
	}
	maxTokens := opt.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 256
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x64726966))
	var prefer *sdk.Mask
	if opt.Prefer != nil {
		prefer = sdk.NewMask(s.Vocab.Len())
		for _, id := range s.plain {
			if opt.Prefer(id) {
				prefer.Allow(id)
			}
		}
	}
	rep := Reply{Tokens: slices.Clone(opt.Prefix)}
	appended := slices.Clone(opt.Prefix)
	var ids []int32
	for {
		if rep.Steps > 4*maxTokens+64 {
			return rep, fmt.Errorf("%d steps without the reply ending", rep.Steps)
		}
		r := &s.result
		r.Reset()
		rep.Appended = append(rep.Appended, slices.Clone(appended))
		s.C.Step(appended, r)
		rep.Steps++
		appended = appended[:0]
		if err := s.check(r); err != nil {
			return rep, fmt.Errorf("step %d: %w", rep.Steps, err)
		}
		back := min(r.Backtrack, len(rep.Tokens))
		rep.Tokens = rep.Tokens[:len(rep.Tokens)-back]
		rep.Back += back
		if r.Fail {
			rep.End = EndFail
			break
		}
		rep.Tokens = append(rep.Tokens, r.Force...)
		appended = append(appended, r.Force...)
		rep.Forced += len(r.Force)
		if r.Stop {
			rep.End = EndStop
			break
		}
		if len(rep.Tokens) >= maxTokens {
			rep.End = EndMaxTokens
			break
		}
		var tok int32
		tok, ids = s.sample(r.Mask, prefer, rng, opt, ids[:0])
		if tok < 0 {
			rep.End = EndEmptyMask
			break
		}
		if slices.Contains(s.End, tok) {
			rep.End = EndToken
			break
		}
		rep.Tokens = append(rep.Tokens, tok)
		appended = append(appended, tok)
	}
	for _, id := range rep.Tokens {
		rep.Text = append(rep.Text, s.Vocab.Token(id)...)
	}
	return rep, nil
}

// check rejects results the host would treat as a fault.
func (s *Session) check(r *sdk.Result) error {
	if r.Mask != nil && r.Mask.Len() != s.Vocab.Len() {
		return fmt.Errorf("mask over %d tokens, vocabulary has %d", r.Mask.Len(), s.Vocab.Len())
	}
	if r.Backtrack < 0 {
		return fmt.Errorf("negative backtrack %d", r.Backtrack)
	}
	for _, id := range r.Force {
		if !s.Vocab.Valid(id) {
			return fmt.Errorf("forced token %d outside the vocabulary", id)
		}
	}
	return nil
}

// sample picks a token uniformly among those m allows (s.plain and s.End
// when m is nil), or -1 when there is none; or, when opt says so, among
// the allowed ones of prefer. ids is scratch space, returned for reuse.
func (s *Session) sample(m, prefer *sdk.Mask, rng *rand.Rand, opt Options, ids []int32) (int32, []int32) {
	var ends []int32
	for _, e := range s.End {
		if m == nil || m.Allowed(e) {
			ends = append(ends, e)
		}
	}
	if len(ends) > 0 && rng.Float64() < opt.EndBias {
		return ends[rng.IntN(len(ends))], ids
	}
	if prefer != nil && rng.Float64() < opt.PreferBias {
		pw := prefer.Words()
		for i, w := range pw {
			if m != nil {
				w &= m.Words()[i]
			}
			for ; w != 0; w &= w - 1 {
				ids = append(ids, int32(i<<5+bits.TrailingZeros32(w)))
			}
		}
		if len(ids) > 0 {
			return ids[rng.IntN(len(ids))], ids
		}
	}
	if m == nil {
		i := rng.IntN(len(s.plain) + len(ends))
		if i < len(s.plain) {
			return s.plain[i], ids
		}
		return ends[i-len(s.plain)], ids
	}
	// Rejection sampling is uniform too, and quick when the mask is dense.
	for i := 0; i < 64 && m.Len() > 0; i++ {
		if id := int32(rng.IntN(m.Len())); m.Allowed(id) {
			return id, ids
		}
	}
	ids = m.AppendIDs(ids)
	if len(ids) == 0 {
		return -1, ids
	}
	return ids[rng.IntN(len(ids))], ids
}
