package sdk

import (
	"fmt"
	"slices"
	"sort"
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
	// WarmUp is the work NewConstraint may spend computing the masks of
	// the states nearest the start, in trie nodes walked (a new state of
	// a sentence regex walks some 27,000 in about 1 ms of Wasm): it makes
	// Init, so a switch to the controller, slower and the first steps
	// faster. By default (0 or negative)
	// only the start state's mask is computed; the others are computed
	// on first use and cached for the instance's life.
	WarmUp int
	// MaxCache bounds the bytes of cached masks (default 32 MiB); the
	// cache is emptied when it is full. Masks that allow few tokens are
	// kept as lists of ids.
	MaxCache int
}

// Constraint drives a Grammar over the tokens of a reply. At each step
// it masks the tokens whose bytes the grammar rejects; it allows the
// end-of-turn token only where the grammar accepts, and stops the reply
// where the grammar accepts and nothing can follow. Appended tokens that
// break the grammar (after a hot swap, say) are taken back. Masks are
// computed with one walk over the token trie and cached by state.
type Constraint[S comparable] struct {
	g       Grammar[S]
	v       *Vocab
	h       Host
	trie    *Trie
	eot     int32
	opts    ConstraintOptions
	tc      TokenClasses[S] // nil when g does not implement it
	class   []tokenClass    // by class - 1
	state   S
	cache   map[S]*entry[S]
	size    int     // bytes in cache
	mask    *Mask   // where sparse masks are laid out for the host
	maskIDs []int32 // the ids set in mask
	build   *Mask   // where masks are computed
	walk    []S     // state at each depth of a trie walk
}

// entry is what a state allows, cached.
type entry[S comparable] struct {
	mask   *Mask   // allowed tokens, dense; nil when sparse or none
	ids    []int32 // allowed tokens, sparse
	accept bool    // the reply may end here
	live   bool    // some ordinary token may follow
	force  []int32 // tokens spelling the bytes every continuation starts with
	after  S       // the state after force
}

// size returns the bytes e keeps.
func (e *entry[S]) size() int {
	n := 64 + 4*(len(e.ids)+len(e.force))
	if e.mask != nil {
		n += 4 * len(e.mask.words)
	}
	return n
}

// maxForce bounds the bytes forced in one step.
const maxForce = 64

// warmStateCost is the work of computing one entry besides its walk,
// in trie nodes.
const warmStateCost = 2000

// NewConstraint prepares g over the vocabulary v; h may be nil (then
// forced text is spelled byte by byte and nothing is logged). The mask
// of the start state, and of as many states near it as
// ConstraintOptions.WarmUp allows, are computed here, during Init.
func NewConstraint[S comparable](g Grammar[S], v *Vocab, h Host, opts ConstraintOptions) *Constraint[S] {
	if opts.MaxCache <= 0 {
		opts.MaxCache = 32 << 20
	}
	c := &Constraint[S]{
		g: g, v: v, h: h, trie: v.Trie(), opts: opts,
		cache: make(map[S]*entry[S]),
		mask:  NewMask(v.Len()),
		build: NewMask(v.Len()),
		walk:  make([]S, v.Longest()+1),
	}
	c.eot, _ = v.EndOfTurn()
	if tc, ok := g.(TokenClasses[S]); ok {
		c.tc = tc
		c.class = v.tokenClasses(tc)
	}
	c.Reset()
	c.warm(max(opts.WarmUp, 1))
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
	case e.live:
		for _, id := range c.maskIDs {
			c.mask.Deny(id)
		}
		for _, id := range e.ids {
			c.mask.Allow(id)
		}
		c.maskIDs = e.ids
		r.Mask = c.mask
	case e.accept:
		r.Stop = true
	default:
		c.logf("no token can continue the reply")
		r.Fail = true
	}
}

// advance follows one token's bytes from s.
func (c *Constraint[S]) advance(s S, id int32) (S, bool) {
	if !c.v.ordinary(id) {
		return s, false
	}
	for _, b := range c.v.Token(id) {
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
	e, _ := c.compute(s, nil)
	return e
}

// warm computes the entries of the states that whole tokens lead to
// from the start state, breadth first, until about budget units of work
// are spent (a trie node walked, a state met at the end of a token, a
// mask laid out): Init has more time than a step.
func (c *Constraint[S]) warm(budget int) {
	start := c.g.Start()
	seen := map[S]bool{start: true}
	queue := []S{start}
	collect := func(t S) {
		budget -= 2
		if !seen[t] {
			seen[t] = true
			queue = append(queue, t)
		}
	}
	for i := 0; i < len(queue) && budget > 0 && c.size < c.opts.MaxCache/2; i++ {
		e, visited := c.compute(queue[i], collect)
		budget -= visited + warmStateCost
		if len(e.force) > 0 {
			collect(e.after)
		}
	}
}

// compute computes and caches s's entry, passing collect (when not nil)
// the state after each allowed token that the trie walk meets. It also
// returns the number of trie nodes walked.
func (c *Constraint[S]) compute(s S, collect func(S)) (*entry[S], int) {
	e := &entry[S]{accept: c.g.Accepts(s)}
	if !c.opts.NoForce && !e.accept {
		if text, after := c.forced(s); len(text) > 0 {
			if e.force = c.v.Spell(c.h, text); e.force != nil {
				e.after = after
			}
		}
	}
	m := c.build
	m.Clear()
	trie := c.trie
	if c.tc != nil {
		if k, budget := c.tc.StateClass(s); k > 0 {
			tc := &c.class[k-1]
			if i := sort.Search(len(tc.costs), func(i int) bool { return tc.costs[i] > budget }) - 1; i >= 0 {
				copy(m.words, tc.masks[i].words)
				e.live = true
			}
			trie = tc.trie
		}
	}
	var live bool
	var visited int
	if tw, ok := c.g.(TrieWalker[S]); ok {
		live, visited = tw.WalkTrie(trie, s, m, collect)
	} else {
		live, visited = c.walkTrie(trie, s, m, collect)
	}
	e.live = e.live || live
	if e.accept && e.live && c.eot >= 0 {
		m.Allow(c.eot)
	}
	if e.live {
		if n := m.Count(); n <= len(m.words)/8 { // an id list at most an eighth of the bitset
			e.ids = m.AppendIDs(make([]int32, 0, n))
		} else {
			e.mask = &Mask{words: slices.Clone(m.words), n: m.n}
		}
	}
	if c.size += e.size(); c.size > c.opts.MaxCache {
		clear(c.cache)
		c.size = e.size()
	}
	c.cache[s] = e
	return e, visited
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
