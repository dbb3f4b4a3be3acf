package engine

import (
	"slices"
	"time"
)

// reply is one Generate call's state, shared by the steps of its loop.
type reply struct {
	g                  *Generator
	seq                *Sequence
	emit               func(Event) error
	st                 Stats
	start, decodeStart time.Time
	replyStart, limit  int
}

// finish ends the reply for reason.
func (r *reply) finish(reason StopReason, err error) (Stats, error) {
	r.st.Reason = reason
	if !r.decodeStart.IsZero() {
		r.st.GenDuration = time.Since(r.decodeStart)
	}
	return r.st, err
}

// atLimit ends a reply that holds limit tokens: MaxTokens, or a full
// window (the tokens emitted last are not fed).
func (r *reply) atLimit() (Stats, error) {
	if r.g.MaxTokens > 0 && r.st.GenTokens >= r.g.MaxTokens {
		return r.finish(StopMaxTokens, nil)
	}
	unfed := r.st.GenTokens - (len(r.seq.Tokens) - r.replyStart)
	return r.finish("", &ContextFullError{Window: r.seq.Cache.Window(), Have: r.seq.Cache.Len(), Adding: unfed})
}

// step feeds pending to the model, the hook's work running beside the
// forward pass, and returns the hook's directive (a plain one without a
// hook). Nothing pending means the logits are the prefill's.
func (r *reply) step(pending []int32) (Directive, error) {
	g, seq := r.g, r.seq
	prev := len(seq.Tokens)
	seq.Tokens = append(seq.Tokens, pending...)
	if g.Hook != nil {
		g.Hook.Begin(seq.Tokens)
	}
	var err error
	if len(pending) > 0 {
		err = g.forward(seq.Cache, pending)
	}
	if g.Hook != nil && err != nil {
		g.Hook.End(g.logits)
	}
	if err != nil {
		seq.Tokens = seq.Tokens[:prev]
		return Directive{}, err
	}
	if r.decodeStart.IsZero() {
		r.st.PromptDuration = time.Since(r.start)
		r.decodeStart = time.Now()
	}
	if g.Hook == nil {
		return Directive{Temperature: -1}, nil
	}
	waitStart := time.Now()
	d := g.Hook.End(g.logits)
	if wait := time.Since(waitStart); r.st.GenTokens == 0 && r.st.HookFirst == 0 {
		r.st.HookFirst = wait
	} else {
		r.st.HookWait += wait
	}
	return d, nil
}

// rewrite applies d's take-back and forced tokens (as many as the limit
// leaves) and emits them; it returns how many tokens went back and the
// tokens forced.
func (r *reply) rewrite(d Directive) (back int, force []int32, err error) {
	seq := r.seq
	back = max(0, min(d.Backtrack, len(seq.Tokens)-r.replyStart))
	if back > 0 {
		r.g.truncate(seq, len(seq.Tokens)-back)
		r.st.GenTokens -= back
		r.st.TakenBack += back
		if err := r.emit(Event{Backtrack: back, Token: -1}); err != nil {
			return 0, nil, err
		}
	}
	force = d.Force[:min(len(d.Force), max(0, r.limit-r.st.GenTokens))]
	for i, tok := range force {
		r.st.GenTokens++
		ev := Event{Token: tok, Forced: true}
		if i == 0 && back == 0 {
			// The logits are this position's: what the model wanted.
			top, err := r.top()
			if err != nil {
				return 0, nil, err
			}
			if top >= 0 && top != tok {
				ev.Overrode, ev.Wanted = true, top
				r.st.Overrides++
			}
		}
		if err := r.emit(ev); err != nil {
			return 0, nil, err
		}
	}
	return back, force, nil
}

// refeed makes the logits current after a take-back or forced tokens:
// it feeds the last kept token again (after a take-back) and the forced
// tokens, so that the step samples as its directive says without asking
// the hook again.
func (r *reply) refeed(back int, force []int32) error {
	g, seq := r.g, r.seq
	feed := g.pending[:0]
	if back > 0 {
		last := seq.Tokens[len(seq.Tokens)-1]
		g.truncate(seq, len(seq.Tokens)-1)
		feed = append(feed, last)
	}
	feed = append(feed, force...)
	g.pending = feed // keep a grown buffer
	prev := len(seq.Tokens)
	seq.Tokens = append(seq.Tokens, feed...)
	if err := g.forward(seq.Cache, feed); err != nil {
		seq.Tokens = seq.Tokens[:prev]
		return err
	}
	return nil
}

// top is the token of the current logits' largest value (-1 when none
// is finite).
func (r *reply) top() (int32, error) {
	g := r.g
	if g.device == nil {
		return Argmax(g.logits), nil
	}
	g.pick = Pick{}
	_, top, err := g.device.Pick(r.seq.Cache, &g.pick)
	return top, err
}

// sample picks the next token as d allows and emits it; stop says that
// the reply ended instead (a stop token, or nothing left to sample).
func (r *reply) sample(d *Directive) (tok int32, stop bool, err error) {
	g, seq := r.g, r.seq
	top := int32(-1)
	switch {
	case g.device != nil:
		tok, top, err = r.pickOnDevice(d)
		if err != nil {
			return 0, true, err
		}
	case d.Allowed != nil:
		top = Argmax(g.logits) // before the sampler penalises in place
		tok = g.Sampler.SampleAmong(g.logits, d.Allowed, seq.Tokens, d.Temperature)
	case d.Mask != nil:
		top = Argmax(g.logits)
		tok = g.Sampler.SampleMask(g.logits, d.Mask, seq.Tokens, d.Temperature)
	default:
		tok = g.Sampler.Sample(g.logits, seq.Tokens, d.Temperature)
	}
	if tok == NonFinite {
		if g.device != nil {
			if err := g.device.ReadLogits(seq.Cache, g.logits); err != nil {
				return 0, true, err
			}
		}
		return 0, true, nonFiniteError(g.logits, len(seq.Tokens)-1)
	}
	if tok < 0 || slices.Contains(g.StopTokens, tok) {
		return 0, true, nil
	}
	r.st.GenTokens++
	ev := Event{Token: tok, Candidates: d.Candidates}
	if top >= 0 && top != tok && (d.Allowed != nil || d.Mask != nil) && !d.permits(top) {
		ev.Overrode, ev.Wanted = true, top
		r.st.Overrides++
	}
	return tok, false, r.emit(ev)
}

// pickOnDevice has the device pick the next token as d allows, with the
// sampler's settings and draw; the logits stay where they are.
func (r *reply) pickOnDevice(d *Directive) (tok, top int32, err error) {
	g := r.g
	p := &g.pick
	*p = Pick{}
	if d.Mask != nil {
		p.Mask, p.MaskPages = d.Mask, d.MaskPages
	} else {
		p.Allowed = d.Allowed
	}
	g.Sampler.Pick(p, r.seq.Tokens, d.Temperature)
	return g.device.Pick(r.seq.Cache, p)
}
