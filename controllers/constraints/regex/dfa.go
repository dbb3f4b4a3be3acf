package regex

import (
	"encoding/binary"
	"math/bits"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// DFA is a deterministic automaton over bytes, built lazily, that tells
// whether a text matches a Go regular expression as a whole. It is an
// sdk.Grammar: a state is a set of threads of the regexp/syntax program
// (an instruction, plus the bytes read so far of a partly read UTF-8
// character) together with the class of the previous byte when the
// expression has empty-width assertions. Transitions are cached.
//
// Text that is not valid UTF-8 never matches (Go's regexp would read a
// bad byte as U+FFFD).
type DFA struct {
	prog    *syntax.Prog
	ranges  [][]rune // per instruction: the sorted rune ranges a rune instruction matches
	context bool     // the program has empty-width assertions
	start   *State
	dead    *State
	states  []*State
	index   map[string]*State
	limit   int // states kept before the cache is flushed

	// scratch
	seen  []uint32 // per instruction: generation of the last closure that visited it
	gen   uint32
	stack []uint32
	trail []*State // states along a trie walk, by depth
	buf   []uint64
	key   []byte
}

// State is a state of a DFA; states are compared by pointer.
type State struct {
	threads []uint64 // sorted; their layout is described in utf8.go
	ctx     uint8    // class of the previous byte (ctxBegin... ctxOther)
	accept  bool
	next    [256]*State // transitions computed so far
	loop    sdk.ByteSet // bytes known to lead back to this state
	noLoop  sdk.ByteSet // bytes known to lead elsewhere
}

// Classes of the previous byte, for empty-width assertions.
const (
	ctxBegin = iota
	ctxNewline
	ctxWord
	ctxOther
)

// maxStates is the default number of states kept before the transition
// cache is flushed.
const maxStates = 10000

// Compile parses expr with Go's regexp syntax (syntax.Perl, as
// regexp.Compile does) into a DFA that matches whole texts.
func Compile(expr string) (*DFA, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	d := &DFA{
		prog:   prog,
		ranges: make([][]rune, len(prog.Inst)),
		index:  make(map[string]*State),
		seen:   make([]uint32, len(prog.Inst)),
		limit:  maxStates,
		dead:   new(State),
	}
	for pc := range prog.Inst {
		inst := &prog.Inst[pc]
		switch inst.Op {
		case syntax.InstEmptyWidth:
			d.context = true
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			d.ranges[pc] = runeRanges(inst)
		}
	}
	ctx := uint8(ctxBegin)
	if !d.context {
		ctx = ctxOther
	}
	d.start = d.intern([]uint64{uint64(prog.Start) << 32}, ctx)
	return d, nil
}

// runeRanges returns the runes inst matches as sorted, merged pairs.
func runeRanges(inst *syntax.Inst) []rune {
	switch inst.Op {
	case syntax.InstRuneAny:
		return []rune{0, unicode.MaxRune}
	case syntax.InstRuneAnyNotNL:
		return []rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}
	case syntax.InstRune1:
		return []rune{inst.Rune[0], inst.Rune[0]}
	}
	if len(inst.Rune) == 1 { // one rune, case folded
		r := inst.Rune[0]
		orbit := []rune{r}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			orbit = append(orbit, f)
		}
		slices.Sort(orbit)
		out := make([]rune, 0, 2*len(orbit))
		for _, f := range orbit {
			out = append(out, f, f)
		}
		return out
	}
	pairs := make([][2]rune, 0, len(inst.Rune)/2)
	for i := 0; i+1 < len(inst.Rune); i += 2 {
		pairs = append(pairs, [2]rune{inst.Rune[i], inst.Rune[i+1]})
	}
	slices.SortFunc(pairs, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	var out []rune
	for _, p := range pairs {
		if n := len(out); n > 0 && p[0] <= out[n-1]+1 {
			out[n-1] = max(out[n-1], p[1])
			continue
		}
		out = append(out, p[0], p[1])
	}
	return out
}

// Start returns the state before the text.
func (d *DFA) Start() *State { return d.start }

// Accepts reports whether a text ending in s matches.
func (d *DFA) Accepts(s *State) bool { return s.accept }

// Next returns the state after b, or false when no match can follow.
func (d *DFA) Next(s *State, b byte) (*State, bool) {
	t := s.next[b]
	if t == nil {
		t = d.step(s, b)
		s.next[b] = t
	}
	return t, t != d.dead
}

// States returns the number of states built since the last flush.
func (d *DFA) States() int { return len(d.states) }

// step computes the transition of s on b.
func (d *DFA) step(s *State, b byte) *State {
	var flags syntax.EmptyOp
	if d.context {
		flags = syntax.EmptyOpContext(ctxRune(s.ctx), byteRune(b))
	}
	closed, _ := d.closure(s.threads, flags, d.buf[:0])
	var next []uint64
	for _, t := range closed {
		if nt, ok := d.advance(t, b); ok {
			next = append(next, nt)
		}
	}
	d.buf = closed[:0]
	if len(next) == 0 {
		return d.dead
	}
	ctx := uint8(ctxOther)
	if d.context {
		ctx = byteClass(b)
	}
	if len(d.states) >= d.limit {
		d.flush()
	}
	return d.intern(next, ctx)
}

// flush forgets every state and transition but the start state: states
// still held elsewhere keep working and rebuild their transitions.
func (d *DFA) flush() {
	for _, s := range d.states {
		s.next = [256]*State{}
	}
	d.states = d.states[:0]
	clear(d.index)
	d.index[string(d.keyOf(d.start.threads, d.start.ctx))] = d.start
	d.states = append(d.states, d.start)
}

// intern returns the state of threads (sorted and deduplicated here)
// and ctx, creating it on first use.
func (d *DFA) intern(threads []uint64, ctx uint8) *State {
	slices.Sort(threads)
	threads = slices.Compact(threads)
	key := d.keyOf(threads, ctx)
	if s, ok := d.index[string(key)]; ok {
		return s
	}
	s := &State{threads: threads, ctx: ctx}
	var end syntax.EmptyOp
	if d.context {
		end = syntax.EmptyOpContext(ctxRune(ctx), -1)
	}
	var scratch []uint64
	scratch, s.accept = d.closure(threads, end, scratch)
	d.index[string(key)] = s
	d.states = append(d.states, s)
	return s
}

func (d *DFA) keyOf(threads []uint64, ctx uint8) []byte {
	d.key = append(d.key[:0], ctx)
	for _, t := range threads {
		d.key = binary.LittleEndian.AppendUint64(d.key, t)
	}
	return d.key
}

// closure appends to out the threads reachable from threads without
// reading a byte, where the empty-width assertions in flags hold: threads
// waiting at rune instructions. It also reports whether the match
// instruction is reachable.
func (d *DFA) closure(threads []uint64, flags syntax.EmptyOp, out []uint64) ([]uint64, bool) {
	d.gen++
	match := false
	for _, t := range threads {
		if uint32(t) != 0 { // inside a character: already at a rune instruction
			out = append(out, t)
			continue
		}
		d.stack = append(d.stack[:0], uint32(t>>32))
		for len(d.stack) > 0 {
			pc := d.stack[len(d.stack)-1]
			d.stack = d.stack[:len(d.stack)-1]
			if d.seen[pc] == d.gen {
				continue
			}
			d.seen[pc] = d.gen
			inst := &d.prog.Inst[pc]
			switch inst.Op {
			case syntax.InstAlt, syntax.InstAltMatch:
				d.stack = append(d.stack, inst.Arg, inst.Out)
			case syntax.InstCapture, syntax.InstNop:
				d.stack = append(d.stack, inst.Out)
			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(inst.Arg)&^flags == 0 {
					d.stack = append(d.stack, inst.Out)
				}
			case syntax.InstMatch:
				match = true
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				out = append(out, uint64(pc)<<32)
			}
		}
	}
	return out, match
}

// ctxRune stands for a previous-byte class in syntax.EmptyOpContext.
func ctxRune(ctx uint8) rune {
	switch ctx {
	case ctxBegin:
		return -1
	case ctxNewline:
		return '\n'
	case ctxWord:
		return 'a'
	}
	return ' '
}

// byteRune stands for b in syntax.EmptyOpContext: \b and ^/$ only look
// at ASCII.
func byteRune(b byte) rune {
	if b < utf8.RuneSelf {
		return rune(b)
	}
	return utf8.RuneSelf
}

func byteClass(b byte) uint8 {
	switch {
	case b == '\n':
		return ctxNewline
	case b < utf8.RuneSelf && syntax.IsWordChar(rune(b)):
		return ctxWord
	}
	return ctxOther
}

// WalkTrie allows in m the tokens of t that can continue a match from s
// (sdk.TrieWalker): the DFA's transitions, in a loop of its own. Where
// every byte below a node leads from the node's state back to it (the
// letters of a word in [a-z]+, the characters of .*), the node's whole
// subtree is allowed without walking it.
func (d *DFA) WalkTrie(t *sdk.Trie, s *State, m *sdk.Mask, collect func(*State)) (live bool, visited int) {
	if cap(d.trail) < maxTokenLen {
		d.trail = make([]*State, maxTokenLen)
	}
	stack := d.trail[:cap(d.trail)]
	stack[0] = s
	nodes, words := t.Nodes, m.Words()
	for i, n := 0, t.Len(); i < n; {
		nd := &nodes[i]
		cur := stack[nd.Depth]
		next := cur.next[nd.Byte]
		if next == nil {
			next = d.step(cur, nd.Byte)
			cur.next[nd.Byte] = next
		}
		if next == d.dead {
			i = int(nd.End)
			continue
		}
		visited++
		end := i + 1
		if nd.Below != 0 && d.loops(next, &t.Sets[nd.Below]) {
			end = int(nd.End)
		} else {
			if int(nd.Depth)+1 >= len(stack) { // a token longer than any before
				stack = append(stack, make([]*State, len(stack))...)
				d.trail = stack
			}
			stack[nd.Depth+1] = next
		}
		if ids := t.IDs[nd.First:nodes[end].First]; len(ids) > 0 {
			for _, id := range ids {
				words[id>>5] |= 1 << (id & 31)
			}
			live = true
			if collect != nil {
				collect(next)
			}
		}
		i = end
	}
	return live, visited
}

// maxTokenLen is the walk stack's first size: longer than most tokens.
const maxTokenLen = 256

// loops reports whether every byte of set leads from s back to s,
// computing the transitions it has not met yet.
func (d *DFA) loops(s *State, set *sdk.ByteSet) bool {
	unknown := set.Without(&s.loop)
	if unknown.Empty() {
		return true
	}
	if unknown.Without(&s.noLoop) != unknown {
		return false
	}
	for i, w := range unknown {
		for ; w != 0; w &= w - 1 {
			b := byte(i<<6 + bits.TrailingZeros64(w))
			t := s.next[b]
			if t == nil {
				t = d.step(s, b)
				s.next[b] = t
			}
			if t != s {
				s.noLoop.Add(b)
				return false
			}
			s.loop.Add(b)
		}
	}
	return true
}
