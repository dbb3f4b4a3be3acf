package json

// grammar is the byte-level pushdown recogniser of JSON texts that
// satisfy a compiled schema; it is an sdk.Grammar over state.
type grammar struct {
	nodes []node
	root  int32
	lits  lits
	bools int32 // literal trie of true and false
	null  int32 // literal trie of null
	links map[link]*link
	// sets are the interned property sets of wide objects, by id (see
	// wideProps).
	sets    [][]uint64
	setIDs  map[string]uint64
	setNext map[[2]uint64]uint64 // (set, bit) → the set with bit
}

// state is a parser state. It is comparable, and equal states behave
// the same: enclosing containers are interned links, so equal stacks are
// equal pointers.
type state struct {
	up  *link // enclosing containers
	top frame // innermost container, or the root pseudo-container
	lex lexer // scalar or key being read
}

type link struct {
	up    *link
	f     frame
	depth int32
}

// frame is an open container (or the root).
type frame struct {
	node  int32  // its schema
	cur   int32  // object: bit index of the property being read, -1 undeclared, -2-o undeclared of patternProperties outcome o
	seen  uint64 // object: properties present (a wide object: their set's id)
	count uint32 // array: items so far, saturated (see itemCount)
	phase uint8
	ws    uint8 // whitespace run before the next token
}

// Phases of a frame.
const (
	pRoot     = iota // before the value
	pRootDone        // after the value
	pObjOpen         // after {
	pObjColon        // after a key
	pObjValue        // after :
	pObjNext         // after a property's value
	pObjComma        // after ,
	pArrOpen         // after [
	pArrNext         // after an item
	pArrComma        // after ,
)

// lexer reads a scalar value or an object key.
type lexer struct {
	node int32  // the value's schema (keys: the object's)
	pos  int32  // position in a literal trie, -1 off the trie; a patterned string's DFA state (strPattern.ids)
	n    uint32 // characters read (saturated) or number length
	kind uint8
	sub  uint8
}

// Lexer kinds.
const (
	lxNone    = iota
	lxString  // string value
	lxPattern // string value with a pattern or format
	lxKey     // object key, any string (pos follows the declared names)
	lxKeyLit  // object key among the declared names only
	lxNumber
	lxLit // keyword or enum value
)

// String sub-states.
const (
	sNormal = iota
	sEsc
	sCont1 // continuation bytes still needed: 1, 2 or 3
	sCont2
	sCont3
	sE0 // after E0: A0-BF, then one more
	sED // after ED: 80-9F, then one more
	sF0 // after F0: 90-BF, then two more
	sF4 // after F4: 80-8F, then two more
	sHex1
	sHex4  = sHex1 + 3 // \u with 4 hex digits to go
	sHexHi = sHex4 + 1 // a patterned string's \u001: one digit to go
)

// Number sub-states.
const (
	nStart = iota
	nSign
	nZero
	nInt
	nDot
	nFrac
	nE
	nESign
	nExp
)

// Limits that keep replies finite and states few.
const (
	maxNumLen = 20 // bytes of a number
	maxWS     = 20 // bytes of a whitespace run: an optional newline, then spaces and tabs
	maxDepth  = 20 // nesting of containers
)

// Outcomes of a lexer step.
const (
	lexMore   = iota // the lexer goes on
	lexDone          // the value ended with this byte
	lexDoneRe        // the value ended before this byte, which the container reads
	lexBad
)

func newGrammar() *grammar {
	g := &grammar{lits: lits{edges: map[uint64]int32{}}, links: map[link]*link{}, setIDs: map[string]uint64{}, setNext: map[[2]uint64]uint64{}}
	g.nodes = append(g.nodes, node{types: tAny, loose: tAny, enum: -1, keys: -1, extra: anyNode, items: anyNode, maxItems: -1, maxLen: -1})
	g.nodes = append(g.nodes, node{enum: -1, keys: -1, extra: -1, items: neverNode, maxItems: -1, maxLen: -1}) // neverNode
	g.bools = g.lits.newNode()
	g.lits.add(g.bools, []byte("true"), 0, 0)
	g.lits.add(g.bools, []byte("false"), 0, 0)
	g.null = g.lits.newNode()
	g.lits.add(g.null, []byte("null"), 0, 0)
	return g
}

// Start returns the state before the text.
func (g *grammar) Start() state {
	return state{top: frame{node: g.root, cur: -1, phase: pRoot}}
}

// Accepts reports whether the text so far is a complete value.
func (g *grammar) Accepts(s state) bool {
	if s.up != nil {
		return false
	}
	switch s.lex.kind {
	case lxNone:
		return s.top.phase == pRootDone
	case lxNumber:
		return numAccepts(s.lex.sub)
	case lxLit:
		return g.lits.term[s.lex.pos] >= 0
	}
	return false
}

// acceptsFrom reports whether text, compact JSON, is a whole value of
// schema n.
func (g *grammar) acceptsFrom(n int32, text []byte) bool {
	s := state{top: frame{node: n, cur: -1, phase: pRoot}}
	for _, b := range text {
		var ok bool
		if s, ok = g.Next(s, b); !ok {
			return false
		}
	}
	return g.Accepts(s)
}

// Next reads one byte.
func (g *grammar) Next(s state, b byte) (state, bool) {
	if s.lex.kind != lxNone {
		var out int
		var avail uint64
		if s.lex.kind == lxKeyLit || s.lex.kind == lxKey {
			if g.nodes[s.top.node].wide != nil {
				return g.wideKeyNext(s, b)
			}
			if s.lex.kind == lxKey && g.nodes[s.top.node].kp != nil {
				return g.patKeyNext(s, b)
			}
			avail = g.avail(&s)
		} else if s.lex.kind == lxLit {
			avail = g.unused(&s.top)
		}
		s.lex, out = g.lexStep(s.lex, avail, b)
		switch out {
		case lexMore:
			return s, true
		case lexBad:
			return s, false
		}
		lex := s.lex
		s.lex = lexer{}
		switch lex.kind {
		case lxKey, lxKeyLit:
			if !g.keyDone(&s, lex, avail) {
				return s, false
			}
		default:
			val := int32(-1)
			if lex.kind == lxLit {
				val = g.lits.term[lex.pos]
			}
			g.valueDone(&s.top, val)
		}
		if out == lexDone {
			return s, true
		}
	}
	return g.frameStep(s, b)
}

// frameStep reads a byte between values: whitespace, punctuation, or the
// start of a value or key.
func (g *grammar) frameStep(s state, b byte) (state, bool) {
	f := &s.top
	if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
		if f.phase <= pRootDone || b == '\r' || b == '\n' && f.ws > 0 || f.ws >= maxWS {
			return s, false
		}
		f.ws++
		return s, true
	}
	f.ws = 0
	nd := &g.nodes[f.node]
	switch f.phase {
	case pRoot:
		return g.startValue(s, f.node, b)
	case pObjOpen, pObjComma:
		if b == '"' {
			return g.startKey(s)
		}
		if b == '}' && f.phase == pObjOpen && g.closes(nd, f) {
			return g.pop(s), true
		}
	case pObjColon:
		if b == ':' {
			f.phase = pObjValue
			return s, true
		}
	case pObjValue:
		child := nd.extra
		if f.cur >= 0 {
			child = nd.props[f.cur]
		} else if f.cur <= -2 {
			child = nd.kp.outs[-2-f.cur] // an undeclared name's patterns
		}
		return g.startValue(s, child, b)
	case pObjNext:
		if b == ',' && (g.extraFits(&s) || g.anyAvail(&s)) {
			f.phase = pObjComma
			return s, true
		}
		if b == '}' && g.closes(nd, f) {
			return g.pop(s), true
		}
	case pArrOpen, pArrNext:
		if b == ']' && int32(f.count) >= nd.minItems {
			return g.pop(s), true
		}
		if b == ',' && f.phase == pArrNext && (nd.maxItems < 0 || int32(f.count) < nd.maxItems) &&
			g.nodes[nd.itemAt(f.count)].minDepth <= g.room(&s) {
			f.phase = pArrComma
			return s, true
		}
		if f.phase == pArrOpen && nd.maxItems != 0 {
			return g.startValue(s, nd.itemAt(0), b)
		}
	case pArrComma:
		return g.startValue(s, nd.itemAt(f.count), b)
	}
	return s, false
}

// startValue reads the first byte of a value of schema n.
func (g *grammar) startValue(s state, n int32, b byte) (state, bool) {
	nd := &g.nodes[n]
	if nd.union != nil {
		if n = nd.union[classOf(b)]; n < 0 {
			return s, false
		}
		nd = &g.nodes[n]
	}
	if nd.enum >= 0 {
		pos := g.lits.child(nd.enum, b)
		s.lex = lexer{kind: lxLit, node: n, pos: pos}
		un := g.unused(&s.top)
		return s, pos >= 0 && (un == allIDs || g.lits.sub[pos]&un != 0)
	}
	switch {
	case b == '{' && nd.types&tObject != 0 && nd.objDepth <= g.room(&s):
		return g.push(s, frame{node: n, cur: -1, phase: pObjOpen}), true
	case b == '[' && nd.types&tArray != 0 && nd.arrDepth <= g.room(&s):
		return g.push(s, frame{node: n, cur: -1, phase: pArrOpen}), true
	case b == '"' && nd.types&tString != 0:
		s.lex = lexer{kind: lxString, node: n, pos: -1}
		if nd.pat != nil {
			s.lex = lexer{kind: lxPattern, node: n, pos: nd.pat.start}
		}
		return s, true
	case (b == '-' || b >= '0' && b <= '9') && nd.types&(tNumber|tInteger) != 0:
		var out int
		s.lex, out = g.numStep(lexer{kind: lxNumber, node: n, pos: 0}, b) // pos: a bounded number's state
		return s, out == lexMore
	case (b == 't' || b == 'f') && nd.types&tBoolean != 0:
		s.lex = lexer{kind: lxLit, node: n, pos: g.lits.child(g.bools, b)}
		return s, true
	case b == 'n' && nd.types&tNull != 0:
		s.lex = lexer{kind: lxLit, node: n, pos: g.lits.child(g.null, b)}
		return s, true
	}
	return s, false
}

// startKey reads the opening quote of a key of the object on top of s.
func (g *grammar) startKey(s state) (state, bool) {
	nd := &g.nodes[s.top.node]
	pos := int32(-1)
	if nd.keys >= 0 {
		pos = g.lits.child(nd.keys, '"')
	}
	if g.extraFits(&s) {
		s.lex = lexer{kind: lxKey, node: s.top.node, pos: pos}
		if nd.kp != nil {
			s.lex.n = uint32(nd.kp.start) + 1
		}
		return s, true
	}
	if pos < 0 || !g.availUnder(&s, pos) {
		return s, false
	}
	s.lex = lexer{kind: lxKeyLit, node: s.top.node, pos: pos}
	return s, true
}

// keyDone records the key just read in the object on top of s; false
// for a key that may not come (repeated, or nested too deep). avail holds
// the declared properties that may still come.
func (g *grammar) keyDone(s *state, lex lexer, avail uint64) bool {
	f := &s.top
	f.cur = -1
	if lex.pos >= 0 && g.lits.term[lex.pos] >= 0 {
		f.cur = g.lits.term[lex.pos]
		if avail&(1<<f.cur) == 0 {
			return false
		}
	} else if !g.extraFits(s) {
		return false
	}
	f.phase = pObjColon
	return true
}

// room returns how many more containers may open inside s.
func (g *grammar) room(s *state) int32 {
	if s.up == nil {
		return maxDepth
	}
	return maxDepth - s.up.depth - 1
}

// avail returns the declared properties that may still come in the
// object on top of s: not present yet, and not nested too deep.
func (g *grammar) avail(s *state) uint64 {
	nd := &g.nodes[s.top.node]
	avail := nd.all &^ s.top.seen &^ nd.blocked[g.room(s)]
	if nd.obj != nil {
		return nd.obj.availRules(g, nd, &s.top, avail, g.room(s))
	}
	return avail
}

// extraFits reports whether an undeclared property may come in the
// object on top of s.
func (g *grammar) extraFits(s *state) bool {
	nd := &g.nodes[s.top.node]
	return g.undeclDepth(nd) <= g.room(s) && (nd.obj == nil || nd.obj.fits(g, nd, &s.top, -1, g.room(s)))
}

// valueDone moves f past the value just read; val is a literal's value
// in its trie (for a discriminating property, the branch it leads to).
func (g *grammar) valueDone(f *frame, val int32) {
	switch f.phase {
	case pRoot:
		f.phase = pRootDone
	case pObjValue:
		if nd := &g.nodes[f.node]; nd.branches != nil {
			f.node, f.seen = nd.branches[val], 1<<nd.discBit[val]
			if w := g.nodes[f.node].wide; w != nil {
				f.seen = g.setWith(0, int(nd.discBit[val]), len(w.all))
			}
		} else if f.cur >= 0 {
			if nd.wide != nil {
				f.seen = g.setWith(f.seen, int(f.cur), len(nd.wide.all))
			} else {
				f.seen |= 1 << f.cur
			}
		}
		if o := g.nodes[f.node].obj; o != nil {
			o.counted(f, f.cur < 0)
		}
		f.phase = pObjNext
	case pArrOpen, pArrComma:
		nd := &g.nodes[f.node]
		if nd.unique {
			f.seen |= 1 << val
		}
		if int32(f.count) < nd.itemCount() {
			f.count++ // counted only as far as a limit or the tuple needs
		}
		f.phase = pArrNext
	}
}

// allIDs is unused's answer where every value may come.
const allIDs = ^uint64(0)

// unused returns the ids of the values an item of the array f may
// still take: under uniqueItems those not written yet, elsewhere all
// (allIDs: a literal trie that marks no ids takes all of its values).
func (g *grammar) unused(f *frame) uint64 {
	if (f.phase == pArrOpen || f.phase == pArrComma) && g.nodes[f.node].unique {
		return ^f.seen
	}
	return allIDs
}

// push opens container f inside s.
func (g *grammar) push(s state, f frame) state {
	l := link{up: s.up, f: s.top}
	if s.up != nil {
		l.depth = s.up.depth + 1
	}
	p, ok := g.links[l]
	if !ok {
		p = &l
		g.links[l] = p
	}
	s.up, s.top = p, f
	return s
}

// pop closes the innermost container.
func (g *grammar) pop(s state) state {
	s.top, s.up = s.up.f, s.up.up
	g.valueDone(&s.top, -1)
	return s
}
