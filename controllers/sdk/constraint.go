package sdk

import (
	"fmt"
	"unicode/utf8"
)

// Grammar is a byte-level constraint on the whole reply text: a state
// machine that reads the reply's bytes. Constraint turns one into a
// controller's steps. S must describe the state completely (two equal
// states accept the same continuations), since masks are cached by
// state.
type Grammar[S comparable] interface {
	// Start returns the state before the reply's first byte.
	Start() S
	// Next returns the state after b, or false when b may not follow.
	Next(s S, b byte) (S, bool)
	// Accepts reports whether the reply may end in s.
	Accepts(s S) bool
}

// ConstraintOptions tune NewConstraint.
type ConstraintOptions struct {
	// Name prefixes the constraint's log lines.
	Name string
	// NoForce turns forcing off: by default, when every continuation
	// starts with the same bytes, they are forced instead of sampled.
	NoForce bool
	// MaxCache bounds the number of cached masks (default 1024); the
	// cache is emptied when it is full.
	MaxCache int
}

// Constraint drives a Grammar over the tokens of a reply. At each step
// it masks the tokens whose bytes the grammar rejects; it allows the
// end-of-turn token only where the grammar accepts, and stops the reply
// where the grammar accepts and nothing can follow. Appended tokens that
// break the grammar (after a hot swap, say) are taken back. Masks are
// computed with one walk over the token trie and cached by state.
type Constraint[S comparable] struct {
	g     Grammar[S]
	v     *Vocab
	h     Host
	trie  *Trie
	eot   int32
	opts  ConstraintOptions
	state S
	cache map[S]*entry[S]
	walk  []S // state at each depth of a trie walk
}

// entry is what a state allows, cached.
type entry[S comparable] struct {
	mask   *Mask   // allowed tokens; nil when none
	accept bool    // the reply may end here
	live   bool    // some ordinary token may follow
	force  []int32 // tokens spelling the bytes every continuation starts with
	after  S       // the state after force
}

// maxForce bounds the bytes forced in one step.
const maxForce = 64

// NewConstraint prepares g over the vocabulary v; h may be nil (then
// forced text is spelled byte by byte and nothing is logged). The mask
// of the start state is computed here, during Init.
func NewConstraint[S comparable](g Grammar[S], v *Vocab, h Host, opts ConstraintOptions) *Constraint[S] {
	if opts.MaxCache <= 0 {
		opts.MaxCache = 1024
	}
	longest := 0
	for _, t := range v.Tokens {
		longest = max(longest, len(t))
	}
	c := &Constraint[S]{
		g: g, v: v, h: h, trie: NewTrie(v), opts: opts,
		cache: make(map[S]*entry[S]),
		walk:  make([]S, longest+1),
	}
	c.eot, _ = v.EndOfTurn()
	c.Reset()
	c.entry(c.state)
	return c
}

// Reset starts a new reply.
func (c *Constraint[S]) Reset() { c.state = c.g.Start() }

// State returns the grammar's state after the reply so far.
func (c *Constraint[S]) State() S { return c.state }

// Step follows the appended tokens and fills r for the next token.
func (c *Constraint[S]) Step(appended []int32, r *Result) {
	for i, id := range appended {
		s, ok := c.advance(c.state, id)
		if !ok {
			r.Backtrack = len(appended) - i
			c.logf("took back %d token(s) that break the constraint", r.Backtrack)
			break
		}
		c.state = s
	}
	e := c.entry(c.state)
	if len(e.force) > 0 {
		r.Force = e.force
		e = c.entry(e.after)
	}
	switch {
	case e.mask != nil:
		r.Mask = e.mask
	case e.accept:
		r.Stop = true
	default:
		c.logf("no token can continue the reply")
		r.Stop = true
	}
}

// advance follows one token's bytes from s.
func (c *Constraint[S]) advance(s S, id int32) (S, bool) {
	if !c.v.Valid(id) || c.v.Special[id] || len(c.v.Tokens[id]) == 0 {
		return s, false
	}
	for _, b := range c.v.Tokens[id] {
		var ok bool
		if s, ok = c.g.Next(s, b); !ok {
			return s, false
		}
	}
	return s, true
}

// entry returns s's cached entry, computing it on first use.
func (c *Constraint[S]) entry(s S) *entry[S] {
	if e, ok := c.cache[s]; ok {
		return e
	}
	if len(c.cache) >= c.opts.MaxCache {
		clear(c.cache)
	}
	e := &entry[S]{accept: c.g.Accepts(s)}
	c.cache[s] = e
	if !c.opts.NoForce && !e.accept {
		if text, after := c.forced(s); len(text) > 0 {
			if e.force = c.v.Spell(c.h, text); e.force != nil {
				e.after = after
				return e
			}
		}
	}
	m := NewMask(c.v.Len())
	c.walk[0] = s
	c.trie.Walk(func(depth int, b byte, ids []int32) bool {
		next, ok := c.g.Next(c.walk[depth], b)
		if !ok {
			return false
		}
		c.walk[depth+1] = next
		for _, id := range ids {
			m.Allow(id)
			e.live = true
		}
		return true
	})
	if e.accept && e.live && c.eot >= 0 {
		m.Allow(c.eot)
	}
	if e.live {
		e.mask = m
	}
	return e
}

// forced returns the bytes that every continuation of s starts with, up
// to an accepting state, a choice or maxForce bytes, cut to whole UTF-8
// characters, and the state after them.
func (c *Constraint[S]) forced(s S) ([]byte, S) {
	var text []byte
	states := []S{s}
	for len(text) < maxForce && !c.g.Accepts(s) {
		var only byte
		var next S
		n := 0
		for b := range 256 {
			if ns, ok := c.g.Next(s, byte(b)); ok {
				if n++; n > 1 {
					break
				}
				only, next = byte(b), ns
			}
		}
		if n != 1 {
			break
		}
		text = append(text, only)
		s = next
		states = append(states, s)
	}
	k := wholeUTF8(text)
	return text[:k], states[k]
}

// wholeUTF8 returns the length of b without a trailing incomplete UTF-8
// sequence.
func wholeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

func (c *Constraint[S]) logf(format string, args ...any) {
	if c.h != nil {
		c.h.Log(c.opts.Name + ": " + fmt.Sprintf(format, args...))
	}
}
