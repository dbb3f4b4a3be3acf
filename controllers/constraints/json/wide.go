package json

import "unsafe"

// Objects of more than 64 declared properties. A small object's sets of
// properties (declared, required, present, blocked by nesting, below a
// key trie node) are uint64 bit masks, in the node, the frame and the
// key trie: the hot path. A wide object keeps them as []uint64 in
// wideProps, and its frame's seen is the id of an interned set of the
// properties present (0: none), so that states stay comparable and equal
// sets equal ids. Every use of a set goes through the helpers below,
// which test wide once.

// wideProps are the property sets of a wide object schema.
type wideProps struct {
	all, required []uint64
	blocked       [maxDepth + 1][]uint64
	// The properties whose names pass through each node of its key trie
	// are in lits.wsub.
}

func newWide(n int) *wideProps {
	words := (n + 63) / 64
	w := &wideProps{all: make([]uint64, words), required: make([]uint64, words)}
	for i := range w.blocked {
		w.blocked[i] = make([]uint64, words)
	}
	return w
}

func setBit(s []uint64, bit int) { s[bit>>6] |= 1 << (bit & 63) }

func hasBit(s []uint64, bit int) bool { return s[bit>>6]&(1<<(bit&63)) != 0 }

// addWide inserts a wide object's property name in its key trie, marking
// bit on the path.
func (g *grammar) addWide(w *wideProps, root int32, s []byte, bit int) {
	g.lits.add(root, s, int32(bit), 0)
	n := root
	for _, b := range s {
		n = g.lits.child(n, b)
		set := g.lits.wsub[n]
		if set == nil {
			set = make([]uint64, len(w.all))
			g.lits.wsub[n] = set
		}
		setBit(set, bit)
	}
}

// setWith returns the id of set id with bit added.
func (g *grammar) setWith(id uint64, bit int, words int) uint64 {
	step := [2]uint64{id, uint64(bit)}
	if next, ok := g.setNext[step]; ok {
		return next
	}
	next := g.internWith(id, bit, words)
	g.setNext[step] = next
	return next
}

func (g *grammar) internWith(id uint64, bit int, words int) uint64 {
	s := make([]uint64, words)
	if id != 0 {
		copy(s, g.sets[id])
	}
	setBit(s, bit)
	key := unsafe.String((*byte)(unsafe.Pointer(&s[0])), len(s)*8)
	if id, ok := g.setIDs[key]; ok {
		return id
	}
	if len(g.sets) == 0 {
		g.sets = append(g.sets, nil) // id 0: the empty set
	}
	g.sets = append(g.sets, s)
	g.setIDs[key] = uint64(len(g.sets) - 1)
	return uint64(len(g.sets) - 1)
}

// wideAvail reports whether a property of under (nil: any) may still come
// in the wide object on top of s: declared, not present, not nested too
// deep.
func (g *grammar) wideAvail(s *state, w *wideProps, under []uint64) bool {
	var seen []uint64
	if s.top.seen != 0 {
		seen = g.sets[s.top.seen]
	}
	blocked := w.blocked[g.room(s)]
	for i, a := range w.all {
		if under != nil {
			a &= under[i]
		}
		if seen != nil {
			a &^= seen[i]
		}
		if a&^blocked[i] != 0 {
			return true
		}
	}
	return false
}

// reqDone reports whether every required property of nd is in seen.
func (g *grammar) reqDone(nd *node, seen uint64) bool {
	if nd.wide == nil {
		return nd.required&^seen == 0
	}
	for i, r := range nd.wide.required {
		if r == 0 {
			continue
		}
		if seen == 0 || r&^g.sets[seen][i] != 0 {
			return false
		}
	}
	return true
}

// anyAvail reports whether a declared property may still come in the
// object on top of s.
func (g *grammar) anyAvail(s *state) bool {
	if w := g.nodes[s.top.node].wide; w != nil {
		return g.wideAvail(s, w, nil)
	}
	return g.avail(s) != 0
}

// availUnder reports whether a declared property whose name passes
// through key trie node pos may still come in the object on top of s.
func (g *grammar) availUnder(s *state, pos int32) bool {
	if w := g.nodes[s.top.node].wide; w != nil {
		under := g.lits.wsub[pos]
		return under != nil && g.wideAvail(s, w, under)
	}
	return g.lits.sub[pos]&g.avail(s) != 0
}

// wideKeyNext reads a byte of a key of the wide object on top of s.
func (g *grammar) wideKeyNext(s state, b byte) (state, bool) {
	l := s.lex
	out := lexMore
	if l.kind == lxKeyLit {
		c := g.lits.child(l.pos, b)
		if c < 0 || !g.availUnder(&s, c) {
			return s, false
		}
		l.pos = c
		if g.lits.term[c] >= 0 {
			out = lexDone
		}
	} else {
		if l.pos >= 0 {
			if l.pos = g.lits.child(l.pos, b); l.pos < 0 && respells(l.sub, b) {
				return s, false
			}
		}
		if l, out = g.strStep(l, b); out == lexBad {
			return s, false
		}
	}
	s.lex = l
	if out == lexMore {
		return s, true
	}
	s.lex = lexer{} // a key ends with its quote
	f := &s.top
	f.cur = -1
	if l.pos >= 0 && g.lits.term[l.pos] >= 0 {
		f.cur = g.lits.term[l.pos]
		w := g.nodes[f.node].wide
		bit := int(f.cur)
		if f.seen != 0 && hasBit(g.sets[f.seen], bit) || hasBit(w.blocked[g.room(&s)], bit) {
			return s, false
		}
	} else if !g.extraFits(&s) {
		return s, false
	}
	f.phase = pObjColon
	return s, true
}
