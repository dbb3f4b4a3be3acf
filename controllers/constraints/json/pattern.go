package json

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/driftwoodlabs/driftwood/controllers/constraints/regex"
)

// A string's pattern (and format) is a regex DFA (the regex controller's)
// run over the string's decoded characters: a plain character's bytes
// as they come, an escape's character once it is complete (\n as a
// newline, \u00e9 as é). \u escapes of surrogates are refused in such a
// string (a character beyond U+FFFF is written as itself), so that every
// escape decodes to one whole character. The closing quote needs a
// matching state.

// stringPattern compiles a schema object's pattern and format into one
// DFA over a string's decoded characters (nil for neither). pattern is
// searched for (JSON Schema's patterns are unanchored), format matched
// whole.
func stringPattern(s map[string]any, at string) (*strPattern, error) {
	parts, err := patternExprs(s, at)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	if len(parts) == 2 {
		return nil, fmt.Errorf("schema %s: keyword \"pattern\" beside \"format\" is not supported", at)
	}
	d, err := regex.Compile(parts[0])
	if err != nil {
		return nil, fmt.Errorf("schema %s: keyword \"pattern\": %v", at, err)
	}
	p := &strPattern{d: d, ids: map[*regex.State]int32{}, dist: map[*regex.State]int32{}}
	p.start = p.id(d.Start())
	// The distances of every state the start reaches, now: the search
	// builds those DFA states, which for a format such as email's counted
	// parts takes tens of milliseconds (more in Wasm), past a step's time
	// budget if it came with the string's first character; dw_init has
	// seconds.
	p.distance(d.Start())
	if p.gaveUp {
		return nil, fmt.Errorf("schema %s: keyword \"pattern\" (or format) makes an automaton of more than %d states, more than the json controller follows", at, maxDistStates)
	}
	return p, nil
}

// patternExprs returns the expressions (Go's syntax, matching whole
// decoded strings) of a schema object's format and pattern: none, one or
// both.
func patternExprs(s map[string]any, at string) ([]string, error) {
	var parts []string
	if f, ok := s["format"]; ok {
		name, _ := f.(string)
		re, ok := formats[name]
		_, num := numFormats[name]
		switch {
		case num, slices.Contains(anyFormats, name):
			// No constraint on strings.
		case !ok:
			return nil, fmt.Errorf("schema %s: keyword \"format\" %q is not enforced by the json controller (it enforces %s), so the schema is refused", at, f, formatNames())
		default:
			parts = append(parts, re)
		}
	}
	if p, ok := s["pattern"]; ok {
		src, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("schema %s: pattern must be a string", at)
		}
		re, err := ecmaToGo(src)
		if err != nil {
			return nil, fmt.Errorf("schema %s: keyword \"pattern\" %q: %v", at, src, err)
		}
		parts = append(parts, `(?s:.*)(?:`+re+`)(?s:.*)`)
	}
	return parts, nil
}

// strPattern is a string schema's pattern (or format) compiled.
type strPattern struct {
	d *regex.DFA
	// ids number the DFA states met, for the lexer (states, by id);
	// start is the start state's.
	ids    map[*regex.State]int32
	states []*regex.State
	start  int32
	// dist holds, by DFA state, the fewest characters that lead from it
	// to a match (noMatch for none; 0 where the search gave up, which
	// refuses the pattern: gaveUp).
	dist   map[*regex.State]int32
	gaveUp bool
	// finish caches canFinish's stretches: whether a match lies exactly
	// need characters or more past a state.
	finish map[finishKey]bool
}

type finishKey struct {
	s    *regex.State
	need int32
}

// maxStretch bounds how many characters canFinish looks ahead for a
// match that must be longer than the shortest (minLength): past it, the
// byte is refused.
const maxStretch = 64

// canFinish reports whether, at DFA state s with n characters of the
// string written, a match can still be completed whose length lies
// within [minLen, maxLen] (maxLen −1: none). The shortest completion
// (distance) settles most cases; when it would end below minLen, the
// states that exactly minLen−n more characters reach are searched (ASCII
// characters only: a stretch through others is refused, never wrongly
// allowed) for one whose own shortest completion still fits. A byte
// that leaves no such completion is refused, so a string can neither
// end too short nor get stuck: an unfinished string would end the reply
// as an invalid value.
func (p *strPattern) canFinish(s *regex.State, n, minLen, maxLen int32) bool {
	d := p.distance(s)
	if d == noMatch || maxLen >= 0 && int64(n)+int64(d) > int64(maxLen) {
		return false
	}
	if n+d >= minLen {
		return true
	}
	need := minLen - n
	if need > maxStretch {
		return false
	}
	key := finishKey{s, need}
	if ok, seen := p.finish[key]; seen {
		return ok
	}
	cur := map[*regex.State]bool{s: true}
	for range need {
		next := map[*regex.State]bool{}
		for st := range cur {
			for b := range byte(0x80) {
				if t, ok := p.d.Next(st, b); ok {
					next[t] = true
				}
			}
		}
		cur = next
	}
	ok := false
	for st := range cur {
		if dd := p.distance(st); dd != noMatch && (maxLen < 0 || int64(minLen)+int64(dd) <= int64(maxLen)) {
			ok = true
			break
		}
	}
	if p.finish == nil {
		p.finish = map[finishKey]bool{}
	}
	p.finish[key] = ok
	return ok
}

const noMatch = math.MaxInt32

// maxDistStates bounds the DFA states one distance search explores:
// past it, the distance of every state it met is taken as 0 (a reply
// may then be caught where no character can follow, never end with a
// mismatch), so that each state costs one search at most.
const maxDistStates = 2048

// id returns s's number, numbering it on first use.
func (p *strPattern) id(s *regex.State) int32 {
	if i, ok := p.ids[s]; ok {
		return i
	}
	p.ids[s] = int32(len(p.states))
	p.states = append(p.states, s)
	return int32(len(p.states) - 1)
}

// distance returns the fewest characters from s to a match: every
// character can be written (a quote, backslash or control character as
// an escape), each counting one, whatever its bytes.
func (p *strPattern) distance(s *regex.State) int32 {
	if d, ok := p.dist[s]; ok {
		return d
	}
	index := map[*regex.State]int32{s: 0}
	states := []*regex.State{s}
	type edge struct {
		from int32
		cost int32
	}
	var rev [][]edge
	for i := 0; i < len(states); i++ {
		if len(states) > maxDistStates {
			p.gaveUp = true
			for _, t := range states {
				if _, ok := p.dist[t]; !ok {
					p.dist[t] = 0 // unknown, each state searched from once
				}
			}
			return 0
		}
		for b := range 256 {
			t, ok := p.d.Next(states[i], byte(b))
			if !ok {
				continue
			}
			j, seen := index[t]
			if !seen {
				j = int32(len(states))
				index[t] = j
				states = append(states, t)
			}
			for len(rev) <= int(j) {
				rev = append(rev, nil)
			}
			cost := int32(1)
			if b&0xc0 == 0x80 {
				cost = 0 // a continuation byte: the character was counted at its first
			}
			rev[j] = append(rev[j], edge{int32(i), cost})
		}
	}
	for len(rev) < len(states) {
		rev = append(rev, nil)
	}
	// 0-1 breadth-first search backwards from the matching states.
	dist := make([]int32, len(states))
	var deque []int32
	for i, t := range states {
		dist[i] = noMatch
		if p.d.Accepts(t) {
			dist[i] = 0
			deque = append(deque, int32(i))
		}
	}
	for len(deque) > 0 {
		v := deque[0]
		deque = deque[1:]
		for _, e := range rev[v] {
			if d := dist[v] + e.cost; d < dist[e.from] {
				dist[e.from] = d
				if e.cost == 0 {
					deque = append([]int32{e.from}, deque...)
				} else {
					deque = append(deque, e.from)
				}
			}
		}
	}
	for i, t := range states {
		p.dist[t] = dist[i]
	}
	return dist[0]
}

// patStep reads one byte of a patterned string, after its opening
// quote. The DFA reads the decoded characters and keeps them well-formed
// UTF-8; a byte is taken only where a match can still be reached within
// the length limit. Escapes: the one-letter ones, and \u00XX for control
// characters only (every other character is written as itself).
func (g *grammar) patStep(l lexer, b byte) (lexer, int) {
	nd := &g.nodes[l.node]
	switch l.sub {
	case sNormal:
		switch {
		case b == '"':
			if int32(l.n) < nd.minLen || !nd.pat.d.Accepts(nd.pat.states[l.pos]) {
				return l, lexBad
			}
			return l, lexDone
		case b < 0x20, b&0xc0 != 0x80 && !g.countChar(&l):
			return l, lexBad
		case b == '\\':
			if !g.escapes(l, "\"\\/") {
				return l, lexBad
			}
			l.sub = sEsc
			return l, lexMore
		}
		if !g.feed(&l, b) {
			return l, lexBad
		}
	case sEsc:
		if b == 'u' {
			if !g.escapes(l, "") {
				return l, lexBad
			}
			l.sub = sHex4
			return l, lexMore
		}
		if c := unescape[b]; c == 0 || !g.feed(&l, c) {
			return l, lexBad
		}
		l.sub = sNormal
	default: // \u00XX: 0, 0, 0 or 1, then any hex digit
		v, err := strconv.ParseUint(string(b), 16, 8)
		switch {
		case err != nil:
			return l, lexBad
		case l.sub == sHex1 || l.sub == sHexHi: // the last digit
			c := byte(v)
			if l.sub == sHexHi {
				c |= 0x10
			}
			if !g.feed(&l, c) {
				return l, lexBad
			}
			l.sub = sNormal
		case l.sub == sHex4-2: // 0 or 1, with a control character after it that can come
			ok := false
			for x := range byte(16) {
				if t := l; v <= 1 && g.feed(&t, byte(v)<<4|x) {
					ok = true
					break
				}
			}
			if !ok {
				return l, lexBad
			}
			l.sub = sHex1
			if v == 1 {
				l.sub = sHexHi
			}
		case v != 0:
			return l, lexBad
		default:
			l.sub--
		}
	}
	return l, lexMore
}

// unescape maps the letter of a one-letter escape to its character.
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escapes reports whether an escape can come next in the patterned
// string l: a control character, or one of also.
func (g *grammar) escapes(l lexer, also string) bool {
	for c := range byte(0x20) {
		if t := l; g.feed(&t, c) {
			return true
		}
	}
	for _, c := range []byte(also) {
		if t := l; g.feed(&t, c) {
			return true
		}
	}
	return false
}

// feed runs one decoded byte of a patterned string through its DFA,
// refusing it where no match can be completed any more within the
// string's length limits (its characters so far are counted in l.n).
func (g *grammar) feed(l *lexer, b byte) bool {
	p := g.nodes[l.node].pat
	t, ok := p.d.Next(p.states[l.pos], b)
	if !ok {
		return false
	}
	if nd := &g.nodes[l.node]; !p.canFinish(t, int32(l.n), nd.minLen, nd.maxLen) {
		return false
	}
	l.pos = p.id(t)
	return true
}
