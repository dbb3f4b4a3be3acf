package json

import (
	stdjson "encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A number with bounds (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum) or multipleOf is read by a small automaton built for
// its schema: states say how the digits read so far compare with each
// bound's digits (less, equal, greater, for prefixes of the same length;
// then, after the point, overall), the residue modulo multipleOf, and
// the text's length; a byte is taken only where some way to finish the
// number is valid. The comparison is exact, on decimal digits: no float
// rounding. Such a number is written without an exponent (1e2 is
// refused, 100 taken): stricter, and every value in range can still be
// written.

// numAuto is the automaton of a bounded number.
type numAuto struct {
	next   [][12]int32 // by state, by symbol ('-', '.', '0'…'9'): the next state, -1 for none
	accept []bool
}

// numKeywords are the keywords numAuto enforces.
var numKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}

// bound is a decimal bound: sign, integer digits without leading zeros,
// fraction digits without trailing zeros.
type bound struct {
	set       bool
	neg       bool
	ip, fp    string
	exclusive bool
}

// decimalParts reads a JSON number exactly.
func decimalParts(s string) (neg bool, ip, fp string, err error) {
	s, neg = strings.CutPrefix(s, "-")
	mant, exps, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp := int64(0)
	if hasExp {
		if exp, err = strconv.ParseInt(exps, 10, 32); err != nil || exp > 1000 || exp < -1000 {
			return false, "", "", fmt.Errorf("exponent out of range")
		}
	}
	i, f, _ := strings.Cut(mant, ".")
	digits := i + f
	point := int64(len(i)) + exp
	switch {
	case point <= 0:
		ip, fp = "", strings.Repeat("0", int(-point))+digits
	case point >= int64(len(digits)):
		ip, fp = digits+strings.Repeat("0", int(point)-len(digits)), ""
	default:
		ip, fp = digits[:point], digits[point:]
	}
	ip, fp = strings.TrimLeft(ip, "0"), strings.TrimRight(fp, "0")
	return neg && (ip != "" || fp != ""), ip, fp, nil
}

// decimalBound reads a bound's value, for comparing bounds.
func decimalBound(v any) (bound, error) {
	num, ok := v.(stdjson.Number)
	if !ok {
		return bound{}, fmt.Errorf("not a number")
	}
	neg, ip, fp, err := decimalParts(string(num))
	return bound{set: true, neg: neg, ip: ip, fp: fp}, err
}

// numState is a state of the automaton while it is built.
type numState struct {
	ph   uint8 // 0 start, 1 after '-', 2 integer digits, 3 after '.', 4 fraction digits
	neg  bool
	zero bool  // the integer part is "0"
	nz   bool  // a digit other than 0 was read
	il   uint8 // significant integer digits
	fp   uint8 // fraction digits
	c    [2]int8
	r    int32 // residue modulo mult, of the digits read (the fraction's scaled)
}

// numSpec is what a bounded number must satisfy.
type numSpec struct {
	b       [2]bound // minimum side, maximum side
	integer bool     // no fraction
	mult    int64    // multipleOf = mult × 10^-scale; 0 for none
	scale   int
}

// maxNumStates bounds the automaton of one schema.
const maxNumStates = 1 << 17

// numBounds reads the numeric keywords of s into a spec; nil when there
// are none.
func numBounds(s map[string]any, integer bool, at string) (*numSpec, error) {
	sp := &numSpec{integer: integer}
	any := false
	for _, k := range numKeywords {
		v, ok := s[k]
		if !ok {
			continue
		}
		any = true
		num, ok := v.(stdjson.Number)
		if !ok {
			return nil, fmt.Errorf("schema %s: keyword %q must be a number (the boolean form of drafts 4 and earlier is not supported)", at, k)
		}
		neg, ip, fp, err := decimalParts(string(num))
		if err != nil {
			return nil, fmt.Errorf("schema %s: keyword %q %s: %v", at, k, num, err)
		}
		if k == "multipleOf" {
			m, err := strconv.ParseInt(strings.TrimLeft(ip+fp, "0"), 10, 64)
			if neg || err != nil || m <= 0 || m > 1000 || len(fp) > 18 {
				return nil, fmt.Errorf("schema %s: keyword \"multipleOf\" %s is not supported (the controller takes a positive m×10^-k with m up to 1000 and k up to 18)", at, num)
			}
			sp.mult, sp.scale = m, len(fp)
			continue
		}
		side := 0
		if strings.HasPrefix(k, "max") || k == "exclusiveMaximum" {
			side = 1
		}
		nb := bound{set: true, neg: neg, ip: ip, fp: fp, exclusive: strings.HasPrefix(k, "exclusive")}
		if old := sp.b[side]; old.set {
			c := cmpBounds(nb, old)
			if side == 1 {
				c = -c
			}
			if c < 0 || c == 0 && !nb.exclusive {
				continue // the other is at least as tight
			}
		}
		sp.b[side] = nb
	}
	if !any {
		return nil, nil
	}
	if sp.mult > 0 && sp.scale == 0 {
		sp.integer = true // a multiple of an integer is one: written without a fraction
	}
	return sp, nil
}

// cmpBounds compares two bounds' values.
func cmpBounds(a, b bound) int {
	sign := func(x bound) int {
		if x.neg {
			return -1
		}
		return 1
	}
	if a.neg != b.neg {
		return sign(a)
	}
	c := 0
	switch {
	case len(a.ip) != len(b.ip):
		c = cmpInt(len(a.ip), len(b.ip))
	case a.ip != b.ip:
		c = strings.Compare(a.ip, b.ip)
	default:
		c = strings.Compare(a.fp, b.fp)
	}
	return c * sign(a)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// build returns the automaton of sp, or nil when no number satisfies it.
func (sp *numSpec) build() (*numAuto, error) {
	mult := max(sp.mult, 1)
	a := &numAuto{}
	index := map[numState]int32{}
	var states []numState
	add := func(s numState) int32 {
		if i, ok := index[s]; ok {
			return i
		}
		i := int32(len(states))
		index[s] = i
		states = append(states, s)
		a.next = append(a.next, [12]int32{})
		a.accept = append(a.accept, sp.accepts(s, mult))
		return i
	}
	add(numState{})
	for i := 0; i < len(states); i++ {
		if len(states) > maxNumStates {
			return nil, fmt.Errorf("the bounds and multipleOf make too many states")
		}
		for sym := range 12 {
			a.next[i][sym] = -1
			if t, ok := sp.step(states[i], sym, mult); ok {
				a.next[i][sym] = add(t)
			}
		}
	}
	// Keep the states from which an accepting one can be reached.
	live := slices.Clone(a.accept)
	for changed := true; changed; {
		changed = false
		for i := range states {
			if live[i] {
				continue
			}
			for _, t := range a.next[i] {
				if t >= 0 && live[t] {
					live[i], changed = true, true
					break
				}
			}
		}
	}
	if !live[0] {
		return nil, nil
	}
	for i := range a.next {
		for sym, t := range a.next[i] {
			if t >= 0 && !live[t] {
				a.next[i][sym] = -1
			}
		}
	}
	return a, nil
}

// step moves s over a symbol: 0 '-', 1 '.', 2+d the digit d.
func (sp *numSpec) step(s numState, sym int, mult int64) (numState, bool) {
	if s.length() >= maxNumLen {
		return s, false
	}
	d := sym - 2
	switch {
	case s.ph == 0 && sym == 0:
		s.ph, s.neg = 1, true
		return s, true
	case (s.ph == 0 || s.ph == 1) && d == 0:
		s.ph, s.zero = 2, true
		return s, true
	case (s.ph == 0 || s.ph == 1 || s.ph == 2 && !s.zero) && d > 0, s.ph == 2 && !s.zero && d == 0:
		s.ph = 2
		s.il++
		for j := range 2 {
			if !sp.b[j].set {
				continue
			}
			bi := sp.b[j].ip
			switch {
			case int(s.il) > len(bi):
				s.c[j] = 1
			case s.c[j] == 0:
				s.c[j] = int8(cmpInt(d, int(bi[s.il-1]-'0')))
			}
		}
	case s.ph == 2 && sym == 1 && !sp.integer:
		s.ph = 3
		for j := range 2 {
			if sp.b[j].set {
				s.c[j] = int8(sp.intCmp(s, j))
			}
		}
		return s, true
	case (s.ph == 3 || s.ph == 4) && d >= 0:
		if sp.mult > 0 && int(s.fp) >= sp.scale {
			return s, false // more fraction digits than multipleOf's
		}
		s.ph = 4
		for j := range 2 {
			if !sp.b[j].set {
				continue
			}
			bf := sp.b[j].fp
			bd := 0
			if int(s.fp) < len(bf) {
				bd = int(bf[s.fp] - '0')
			}
			if s.c[j] == 0 {
				s.c[j] = int8(cmpInt(d, bd))
			}
		}
		s.fp++
	default:
		return s, false
	}
	if d > 0 {
		s.nz = true
	}
	s.r = int32((int64(s.r)*10 + int64(d)) % mult)
	return s, true
}

// length returns the bytes of text that led to s.
func (s numState) length() int {
	n := int(s.il)
	if s.neg {
		n++
	}
	if s.zero {
		n++
	}
	if s.ph >= 3 {
		n += 1 + int(s.fp)
	}
	return n
}

// intCmp compares the integer digits of s with bound j's.
func (sp *numSpec) intCmp(s numState, j int) int {
	if c := cmpInt(int(s.il), len(sp.b[j].ip)); c != 0 {
		return c
	}
	return int(s.c[j])
}

// accepts reports whether s is a whole number within the bounds.
func (sp *numSpec) accepts(s numState, mult int64) bool {
	if s.ph != 2 && s.ph != 4 {
		return false
	}
	if sp.mult > 0 {
		r := int64(s.r)
		for range sp.scale - int(s.fp) {
			r = r * 10 % mult
		}
		if r != 0 {
			return false
		}
	}
	for j, b := range sp.b {
		if !b.set {
			continue
		}
		mag := int(s.c[j])
		if s.ph == 2 {
			mag = sp.intCmp(s, j)
		}
		if mag == 0 && int(s.fp) < len(b.fp) {
			mag = -1
		}
		vneg := s.neg && s.nz
		var c int
		switch {
		case !vneg && !b.neg:
			c = mag
		case !vneg:
			c = 1
		case !b.neg:
			c = -1
		default:
			c = -mag
		}
		if j == 1 {
			c = -c // the maximum side: the value must be below
		}
		if c < 0 || c == 0 && b.exclusive {
			return false
		}
	}
	return true
}

// numSymbol returns the automaton's symbol for b, or -1.
func numSymbol(b byte) int {
	switch {
	case b == '-':
		return 0
	case b == '.':
		return 1
	case b >= '0' && b <= '9':
		return int(b-'0') + 2
	}
	return -1
}

// step reads one byte of a bounded number (its automaton's state
// in l.pos); l.sub says whether it may end here, as for other numbers.
func (a *numAuto) step(l lexer, b byte) (lexer, int) {
	if sym := numSymbol(b); sym >= 0 {
		if t := a.next[l.pos][sym]; t >= 0 {
			l.pos, l.n = t, l.n+1
			l.sub = nSign // may not end
			if a.accept[t] {
				l.sub = nInt
			}
			return l, lexMore
		}
	}
	if a.accept[l.pos] {
		return l, lexDoneRe
	}
	return l, lexBad
}
