package json

import (
	"math"
	"unicode/utf8"
)

// lexStep reads one byte of the scalar or key being read; avail holds
// the declared properties that may still come in the enclosing object.
func (g *grammar) lexStep(l lexer, avail uint64, b byte) (lexer, int) {
	switch l.kind {
	case lxNumber:
		return g.numStep(l, b)
	case lxLit:
		// avail: the ids of the values that may still come (uniqueItems;
		// all ones elsewhere, where the trie marks no ids).
		if c := g.lits.child(l.pos, b); c >= 0 && (avail == allIDs || g.lits.sub[c]&avail != 0) {
			l.pos = c
			return l, lexMore
		}
		if t := g.lits.term[l.pos]; t >= 0 && (avail == allIDs || avail&(1<<t) != 0) {
			return l, lexDoneRe
		}
		return l, lexBad
	case lxKeyLit:
		c := g.lits.child(l.pos, b)
		if c < 0 || g.lits.sub[c]&avail == 0 {
			return l, lexBad
		}
		l.pos = c
		if g.lits.term[c] >= 0 {
			return l, lexDone
		}
		return l, lexMore
	case lxKey:
		if l.pos >= 0 {
			if l.pos = g.lits.child(l.pos, b); l.pos < 0 && respells(l.sub, b) {
				return l, lexBad
			}
		}
	case lxPattern:
		return g.patStep(l, b)
	}
	return g.strStep(l, b)
}

// respells reports whether byte b, in string sub-state sub, may spell
// differently a character that a literal trie holds, once it leaves the
// trie: an escape started off the trie, or one that leaves it part-way
// ("\u0061" for "a", "\/" for "/", "\u000a" for "\n"). A string that
// may still equal one of the trie's (a declared property name, an
// excluded value) must not take such a byte, or it would equal it
// decoded while its bytes differ. Raw UTF-8 spells each character one
// way only, and the tries spell every character raw but those JSON
// must escape (keyLit).
func respells(sub uint8, b byte) bool {
	return sub == sEsc || sub >= sHex1 || sub == sNormal && b == '\\'
}

// strStep reads one byte of a string, after its opening quote: JSON
// escapes, and well-formed UTF-8 only.
func (g *grammar) strStep(l lexer, b byte) (lexer, int) {
	switch l.sub {
	case sNormal:
		switch {
		case b == '"':
			if l.kind == lxString && int32(l.n) < g.nodes[l.node].minLen {
				return l, lexBad
			}
			return l, lexDone
		case b < 0x20 || !g.countChar(&l):
			return l, lexBad
		case b == '\\':
			l.sub = sEsc
		case b < 0x80:
		case b >= 0xc2 && b <= 0xdf:
			l.sub = sCont1
		case b == 0xe0:
			l.sub = sE0
		case b == 0xed:
			l.sub = sED
		case b >= 0xe1 && b <= 0xef:
			l.sub = sCont2
		case b == 0xf0:
			l.sub = sF0
		case b >= 0xf1 && b <= 0xf3:
			l.sub = sCont3
		case b == 0xf4:
			l.sub = sF4
		default:
			return l, lexBad
		}
	case sEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			l.sub = sNormal
		case 'u':
			l.sub = sHex4
		default:
			return l, lexBad
		}
	case sCont1, sCont2, sCont3:
		if b&0xc0 != 0x80 {
			return l, lexBad
		}
		if l.sub == sCont1 {
			l.sub = sNormal
		} else {
			l.sub--
		}
	case sE0, sED, sF0, sF4:
		lo, hi, next := byte(0xa0), byte(0xbf), uint8(sCont1)
		switch l.sub {
		case sED:
			lo, hi = 0x80, 0x9f
		case sF0:
			lo, next = 0x90, sCont2
		case sF4:
			lo, hi, next = 0x80, 0x8f, sCont2
		}
		if b < lo || b > hi {
			return l, lexBad
		}
		l.sub = next
	default: // \u digits
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F') {
			return l, lexBad
		}
		if l.sub == sHex1 {
			l.sub = sNormal
		} else {
			l.sub--
		}
	}
	return l, lexMore
}

// countChar counts one more character of a string value against its
// length limits, counting only as far as they need.
func (g *grammar) countChar(l *lexer) bool {
	if l.kind != lxString && l.kind != lxPattern {
		return true
	}
	nd := &g.nodes[l.node]
	if nd.maxLen >= 0 && int32(l.n) >= nd.maxLen {
		return false
	}
	if int32(l.n) < max(nd.minLen, nd.maxLen) {
		l.n++
	}
	return true
}

// numStep reads one byte of a number, or ends it.
func (g *grammar) numStep(l lexer, b byte) (lexer, int) {
	nd := &g.nodes[l.node]
	if nd.num != nil {
		return nd.num.step(l, b)
	}
	digit := b >= '0' && b <= '9'
	frac := nd.types&tNumber != 0 // not integers only
	exp := frac && (b == 'e' || b == 'E')
	next := -1
	switch l.sub {
	case nStart:
		switch {
		case b == '-':
			next = nSign
		case b == '0':
			next = nZero
		case digit:
			next = nInt
		}
	case nSign:
		switch {
		case b == '0':
			next = nZero
		case digit:
			next = nInt
		}
	case nZero, nInt:
		switch {
		case digit && l.sub == nInt:
			next = nInt
		case b == '.' && frac:
			next = nDot
		case exp:
			next = nE
		}
	case nDot, nFrac:
		switch {
		case digit:
			next = nFrac
		case exp && l.sub == nFrac:
			next = nE
		}
	case nE:
		switch {
		case b == '+' || b == '-':
			next = nESign
		case digit:
			next = nExp
		}
	case nESign, nExp:
		if digit {
			next = nExp
		}
	}
	// A byte that leaves the number unfinished ('-', '.', 'e', a sign)
	// needs room for one more: at the length limit "1234." could end
	// neither way (TestRandomSchemas wrote it).
	if next >= 0 && (l.n+1 < maxNumLen || l.n+1 == maxNumLen && numAccepts(uint8(next))) {
		l.sub, l.n = uint8(next), l.n+1
		return l, lexMore
	}
	if numAccepts(l.sub) {
		return l, lexDoneRe
	}
	return l, lexBad
}

// numAccepts reports whether a number may end in sub-state sub.
func numAccepts(sub uint8) bool {
	return sub == nZero || sub == nInt || sub == nFrac || sub == nExp
}

// TokenClass puts the tokens made of plain string characters (whole
// UTF-8 characters, no quote, backslash or control character) in class
// 1, at the cost of their character count: inside a string they are
// decided by the length limit alone (see sdk.TokenClasses).
func (g *grammar) TokenClass(b []byte) (class, cost int) {
	if !utf8.Valid(b) {
		return 0, 0
	}
	for _, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return 0, 0
		}
	}
	return 1, utf8.RuneCount(b)
}

// StateClass returns class 1 between the characters of a string, with
// the characters left before its length limit.
func (g *grammar) StateClass(s state) (class, budget int) {
	if s.lex.sub != sNormal {
		return 0, 0
	}
	switch s.lex.kind {
	case lxKey:
		if g.nodes[s.lex.node].kp != nil {
			return 0, 0 // patternProperties decide its characters
		}
		return 1, math.MaxInt
	case lxString:
		if nd := &g.nodes[s.lex.node]; nd.maxLen >= 0 {
			return 1, int(nd.maxLen) - int(s.lex.n)
		}
		return 1, math.MaxInt
	}
	return 0, 0
}
