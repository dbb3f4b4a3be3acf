package json

import (
	"fmt"
	"slices"

	"github.com/driftwoodlabs/driftwood/controllers/constraints/regex"
)

// patternProperties. Each pattern is searched for in a key's decoded
// name (as pattern is in a string), and a property whose name matches
// must be valid for the schema of every pattern it matches, for
// properties[name] too when declared; additionalProperties applies only
// to names that match neither. Declared names get their schema at
// compile time (allOf of their own and the matching patterns'). An
// undeclared key runs a product of the patterns' DFAs, built whole at
// compile time (bounded like a pattern's), whose states say which
// patterns the name so far matches; each distinct set of matches met
// gets one schema, compiled as their allOf. An undeclared name is
// written without escapes (no quote, backslash or control character in
// it), so that the DFAs read its bytes as they come; a declared name
// keeps its trie's spelling. A key's byte is taken only where the key can
// still end either as a declared name that may come or as an undeclared
// one whose schema takes a value within the nesting left (no dead end).
type keyPats struct {
	// next[state*256+b] is the product state after byte b, -1 for none
	// (a byte an undeclared name does not take).
	next []int32
	// out is each state's outcome (index into outs); outs the schema
	// of each outcome, -1 where the name would be refused (no pattern
	// matches, and additionalProperties refuses it).
	out   []int32
	outs  []int32
	start int32
	rev   [][]int32 // states before each state
	// best holds the least nesting an undeclared name's value needs,
	// over the names that can still be completed from each state;
	// onTrie the same from each node of the declared names' trie
	// (whose own names do not end there as undeclared ones), and
	// trieState that node's product state (-1: an escape was used).
	best      []int32
	onTrie    map[int32]int32
	trieState map[int32]int32
	// first is the least nesting a new undeclared key needs.
	first int32
}

// maxKeyPatterns bounds the patterns of one patternProperties.
const maxKeyPatterns = 64

// compilePatternProps compiles patternProperties and propertyNames of
// schema object s into n (names and props declared already, extra set),
// merging the matching patterns' schemas into each declared property's,
// and making a declared name that propertyNames refuses impossible.
func (c *compiler) compilePatternProps(n *node, s map[string]any, props map[string]any, at string) error {
	pp := map[string]any{}
	if raw, ok := s["patternProperties"]; ok {
		if pp, ok = raw.(map[string]any); !ok {
			return fmt.Errorf("schema %s: patternProperties must be an object", at)
		}
	}
	rules, none, err := nameRules(s["propertyNames"], at+"/propertyNames")
	if err != nil {
		return err
	}
	if none {
		// No name is valid: no property may come.
		for bit := range n.props {
			n.props[bit] = neverNode
		}
		n.extra = -1
		return nil
	}
	ruleDFAs := make([]*regex.DFA, len(rules))
	for i, r := range rules {
		if ruleDFAs[i], err = regex.Compile(r); err != nil {
			return fmt.Errorf("schema %s: keyword \"propertyNames\": %v", at, err)
		}
	}
	defer func() {
		for bit, name := range n.names {
			if !matchAll(ruleDFAs, name) {
				n.props[bit] = neverNode // propertyNames refuses it
			}
		}
	}()
	if len(pp) == 0 && (len(rules) == 0 || n.extra < 0) {
		return nil // no undeclared name, or none with rules to follow
	}
	if n.wide != nil {
		return fmt.Errorf("schema %s: keywords \"patternProperties\" and \"propertyNames\" (with undeclared names allowed) are enforced on objects of up to 64 declared properties only", at)
	}
	if len(pp)+len(rules) > maxKeyPatterns {
		return fmt.Errorf("schema %s: keyword \"patternProperties\" with more than %d patterns is not enforced", at, maxKeyPatterns-len(rules))
	}
	pats := make([]string, 0, len(pp))
	for p := range pp {
		pats = append(pats, p)
	}
	slices.Sort(pats)
	dfas := make([]*regex.DFA, len(pats))
	for i, p := range pats {
		re, err := ecmaToGo(p)
		if err != nil {
			return fmt.Errorf("schema %s: keyword \"patternProperties\" %q: %v", at, p, err)
		}
		if dfas[i], err = regex.Compile(`(?s:.*)(?:` + re + `)(?s:.*)`); err != nil {
			return fmt.Errorf("schema %s: keyword \"patternProperties\" %q: %v", at, p, err)
		}
	}
	// The schema of a set of matching patterns (and a declared
	// property's own), compiled once per set.
	single := map[int]int32{}
	schemaOf := func(own any, mask uint64, where string) (int32, error) {
		var list []any
		if own != nil {
			list = append(list, own)
		}
		for i, p := range pats {
			if mask&(1<<i) != 0 {
				list = append(list, pp[p])
			}
		}
		if own == nil && len(list) == 1 {
			i := 0
			for mask&(1<<i) == 0 {
				i++
			}
			if idx, ok := single[i]; ok {
				return idx, nil
			}
			idx, err := c.schema(list[0], at+"/patternProperties/"+pats[i])
			single[i] = idx
			return idx, err
		}
		return c.schema(map[string]any{"allOf": list}, where)
	}
	matches := func(name string) uint64 {
		var m uint64
		for i, d := range dfas {
			st, ok := d.Start(), true
			for j := 0; j < len(name) && ok; j++ {
				st, ok = d.Next(st, name[j])
			}
			if ok && d.Accepts(st) {
				m |= 1 << i
			}
		}
		return m
	}
	for bit, name := range n.names {
		m := matches(name)
		if m == 0 {
			continue
		}
		own, declared := props[name]
		if !declared {
			own = nil
		}
		idx, err := schemaOf(own, m, at+"/properties/"+name)
		if err != nil {
			return err
		}
		n.props[bit] = idx
	}
	// The product of the DFAs over the bytes an undeclared name takes.
	kp := &keyPats{onTrie: map[int32]int32{}, trieState: map[int32]int32{}}
	// A product state: each DFA's state (nil: that pattern can no
	// longer match), and the continuation bytes its character still
	// needs (a name cannot end inside a character: such a state has no
	// outcome, -1).
	type tuple struct {
		st   []*regex.State
		cont int
	}
	key := func(t tuple) string {
		return fmt.Sprint(t.st, t.cont)
	}
	// The rules follow the patterns in the product, as its last DFAs.
	patBits := uint64(1)<<len(dfas) - 1
	ruleBits := (uint64(1)<<len(rules) - 1) << len(dfas)
	dfas = append(dfas, ruleDFAs...)
	starts := tuple{st: make([]*regex.State, len(dfas))}
	for i, d := range dfas {
		starts.st[i] = d.Start()
	}
	index := map[string]int32{key(starts): 0}
	states := []tuple{starts}
	outIdx := map[uint64]int32{}
	var masks []uint64
	for i := 0; i < len(states); i++ {
		if len(states) > maxDistStates {
			return fmt.Errorf("schema %s: keyword \"patternProperties\" makes an automaton of more than %d states, more than the json controller follows", at, maxDistStates)
		}
		var m uint64
		for j, st := range states[i].st {
			if st != nil && dfas[j].Accepts(st) {
				m |= 1 << j
			}
		}
		o, ok := outIdx[m]
		if !ok {
			o = int32(len(masks))
			outIdx[m] = o
			masks = append(masks, m)
		}
		if states[i].cont > 0 {
			o = -1
		}
		kp.out = append(kp.out, o)
		row := make([]int32, 256)
		for b := range 256 {
			row[b] = -1
			if b < 0x20 || b == '"' || b == '\\' {
				continue
			}
			t := tuple{st: make([]*regex.State, len(dfas))}
			switch cont := states[i].cont; {
			case cont > 0:
				t.cont = cont - 1
			case b >= 0xf0:
				t.cont = 3
			case b >= 0xe0:
				t.cont = 2
			case b >= 0xc0:
				t.cont = 1
			}
			live, ruled := false, true
			for j, st := range states[i].st {
				if st == nil {
					continue
				}
				if nx, ok := dfas[j].Next(st, byte(b)); ok {
					t.st[j], live = nx, true
				} else if patBits>>j == 0 {
					ruled = false // a rule of propertyNames can no longer match
				}
			}
			if !live || !ruled {
				continue // not well-formed UTF-8 (a search's (?s:.*) takes every character), or a name propertyNames refuses
			}
			k := key(t)
			id, seen := index[k]
			if !seen {
				id = int32(len(states))
				index[k] = id
				states = append(states, t)
			}
			row[b] = id
		}
		kp.next = append(kp.next, row...)
	}
	kp.rev = make([][]int32, len(states))
	for s := range states {
		for b := range 256 {
			if t := kp.next[s*256+b]; t >= 0 && !slices.Contains(kp.rev[t], int32(s)) {
				kp.rev[t] = append(kp.rev[t], int32(s))
			}
		}
	}
	for _, m := range masks {
		idx := n.extra
		switch {
		case m&ruleBits != ruleBits:
			idx = -1 // a rule of propertyNames does not match
		case m&patBits != 0:
			var err error
			if idx, err = schemaOf(nil, m&patBits, at+"/patternProperties"); err != nil {
				return err
			}
		}
		kp.outs = append(kp.outs, idx)
	}
	// Each node of the declared names' trie: its product state.
	if n.keys >= 0 {
		var walk func(tn, st int32)
		walk = func(tn, st int32) {
			kp.trieState[tn] = st
			for b := range 256 {
				ch := c.g.lits.child(tn, byte(b))
				if ch < 0 || c.g.lits.term[ch] >= 0 {
					continue // a name's closing quote
				}
				nst := int32(-1)
				if st >= 0 {
					nst = kp.next[int(st)*256+b]
				}
				walk(ch, nst)
			}
		}
		walk(c.g.lits.child(n.keys, '"'), kp.start)
	}
	n.kp = kp
	return nil
}

// keyDepths recomputes best, onTrie and first from the outcomes' nesting.
func (g *grammar) keyDepths(n *node) {
	const inf = maxDepth + 1
	kp := n.kp
	depth := func(o int32) int32 {
		if o < 0 {
			return inf // inside a character
		}
		if idx := kp.outs[o]; idx >= 0 {
			return g.nodes[idx].minDepth
		}
		return inf
	}
	ns := len(kp.out)
	if kp.best == nil {
		kp.best = make([]int32, ns)
	}
	for s := range kp.best {
		kp.best[s] = inf
	}
	// By increasing depth, backwards from the states that end there.
	for d := int32(0); d < inf; d++ {
		var queue []int32
		for s := range ns {
			if kp.best[s] == inf && depth(kp.out[s]) == d {
				kp.best[s] = d
				queue = append(queue, int32(s))
			}
		}
		for len(queue) > 0 {
			s := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, p := range kp.rev[s] {
				if kp.best[p] == inf {
					kp.best[p] = d
					queue = append(queue, p)
				}
			}
		}
	}
	kp.first = kp.best[kp.start]
	if n.keys < 0 {
		return
	}
	var walk func(tn int32) int32
	walk = func(tn int32) int32 {
		st := kp.trieState[tn]
		d := int32(inf)
		if q := g.lits.child(tn, '"'); st >= 0 && (q < 0 || g.lits.term[q] < 0) {
			d = depth(kp.out[st]) // the name ends here as an undeclared one
		}
		for b := range 256 {
			ch := g.lits.child(tn, byte(b))
			switch {
			case ch >= 0 && g.lits.term[ch] >= 0:
			case ch >= 0:
				d = min(d, walk(ch))
			case st >= 0:
				if t := kp.next[int(st)*256+b]; t >= 0 {
					d = min(d, kp.best[t])
				}
			}
		}
		kp.onTrie[tn] = d
		return d
	}
	kp.first = walk(g.lits.child(n.keys, '"'))
}

// undeclDepth returns the least nesting an undeclared key's value needs
// in an object of schema nd (maxDepth+1 where none may come).
func (g *grammar) undeclDepth(nd *node) int32 {
	if nd.kp != nil {
		if nd.kp.best == nil {
			g.keyDepths(nd) // an enum checked at compile time, before depths
		}
		return nd.kp.first
	}
	if nd.extra < 0 {
		return maxDepth + 1
	}
	return g.nodes[nd.extra].minDepth
}

// patKeyNext reads one byte of a key that may be undeclared, in an
// object with patternProperties: the key's lexer follows the declared
// names' trie (pos) and the patterns' product (n: its state plus one, 0
// where the key can no longer end undeclared).
func (g *grammar) patKeyNext(s state, b byte) (state, bool) {
	nd := &g.nodes[s.top.node]
	kp := nd.kp
	if kp.best == nil {
		g.keyDepths(nd) // an enum checked at compile time, before depths
	}
	l := s.lex
	avail := g.avail(&s)
	room := g.room(&s)
	c := int32(-1)
	if l.pos >= 0 {
		c = g.lits.child(l.pos, b)
	}
	nl, out := g.strStep(l, b)
	switch out {
	case lexBad:
		return s, false
	case lexDone:
		s.lex = lexer{}
		f := &s.top
		if c >= 0 && g.lits.term[c] >= 0 {
			cur := g.lits.term[c]
			if avail&(1<<cur) == 0 {
				return s, false
			}
			f.cur, f.phase = cur, pObjColon
			return s, true
		}
		if l.n == 0 {
			return s, false
		}
		o := kp.out[l.n-1]
		if o < 0 || kp.outs[o] < 0 || g.nodes[kp.outs[o]].minDepth > room {
			return s, false
		}
		f.cur, f.phase = -2-o, pObjColon
		return s, true
	}
	trieOK := c >= 0 && g.lits.sub[c]&avail != 0
	nl.pos, nl.n = c, 0
	if l.n > 0 {
		if t := kp.next[int(l.n-1)*256+int(b)]; t >= 0 {
			d := kp.best[t]
			if c >= 0 {
				d = kp.onTrie[c]
			}
			if d <= room {
				nl.n = uint32(t) + 1
			}
		}
	}
	if !trieOK && nl.n == 0 {
		return s, false
	}
	s.lex = nl
	return s, true
}
