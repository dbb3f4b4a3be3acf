package tokenizer

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The split patterns this package implements by hand, as they appear in
// tokenizer.json files. Go's regexp has neither lookahead nor a Unicode \s.
const (
	// llama3Pattern is the Llama 3 (tiktoken cl100k-style) split regex.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwenPattern is Qwen2's and Qwen3's: Llama 3's with one number per
	// piece.
	qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Pattern is GPT-2's split regex, built into the ByteLevel
	// pre-tokenizer when its use_regex is true.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitter returns the byte length of the first piece of a non-empty s.
type splitter func(s string) int

// digitsMode is the behaviour of a Digits pre-tokenizer run before the
// byte-level split.
type digitsMode int

const (
	digitsNone       digitsMode = iota // no Digits step
	digitsContiguous                   // runs of numeric characters are pieces
	digitsIndividual                   // every numeric character is a piece
)

// preTokenizer cuts ordinary text (no added tokens) into the pieces that
// BPE encodes one by one, after the NFC normalizer when nfc is set.
type preTokenizer struct {
	nfc    bool
	digits digitsMode
	split  splitter
}

// each calls fn for every piece of text, in order.
func (p preTokenizer) each(text string, fn func(piece string)) {
	if p.nfc && !norm.NFC.IsNormalString(text) {
		text = norm.NFC.String(text)
	}
	if p.digits == digitsNone {
		p.splitAll(text, fn)
		return
	}
	// Digits: char::is_numeric (Unicode Nd, Nl, No) characters are cut out,
	// singly or as runs, and the text between them is split separately.
	for len(text) > 0 {
		r, n := utf8.DecodeRuneInString(text)
		if isN(r) {
			if p.digits == digitsContiguous {
				for n < len(text) {
					r, m := utf8.DecodeRuneInString(text[n:])
					if !isN(r) {
						break
					}
					n += m
				}
			}
			p.splitAll(text[:n], fn)
			text = text[n:]
			continue
		}
		for n < len(text) {
			r, m := utf8.DecodeRuneInString(text[n:])
			if isN(r) {
				break
			}
			n += m
		}
		p.splitAll(text[:n], fn)
		text = text[n:]
	}
}

func (p preTokenizer) splitAll(text string, fn func(piece string)) {
	for len(text) > 0 {
		n := p.split(text)
		fn(text[:n])
		text = text[n:]
	}
}

// Character classes. \p{L} and \p{N} are the Unicode general categories,
// \s is the Unicode White_Space property (unicode.IsSpace). Invalid UTF-8
// bytes decode as utf8.RuneError and so fall in "other", like U+FFFD.
func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return (r|0x20) >= 'a' && (r|0x20) <= 'z'
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isS(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.IsSpace(r)
}

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// runOf returns the byte length of the longest prefix of s whose runes all
// satisfy in.
func runOf(s string, in func(rune) bool) int {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !in(r) {
			break
		}
		i += n
	}
	return i
}

// contraction matches the suffixes 's 't 're 've 'm 'll 'd after the
// apostrophe (s starts after it) and returns their byte length, or 0.
// With fold the match is case-insensitive as (?i:...) is: simple case
// folding, which also folds U+017F LATIN SMALL LETTER LONG S to s.
func contraction(s string, fold bool) int {
	eq := func(i int, c byte) (int, bool) {
		if i >= len(s) {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == rune(c) {
			return n, true
		}
		if !fold {
			return 0, false
		}
		return n, r == rune(c)-'a'+'A' || (c == 's' && r == 'ſ')
	}
	for _, c := range []byte{'s', 't', 'm', 'd'} {
		if n, ok := eq(0, c); ok {
			return n
		}
	}
	for _, pair := range []string{"re", "ve", "ll"} {
		if n, ok := eq(0, pair[0]); ok {
			if m, ok := eq(n, pair[1]); ok {
				return n + m
			}
		}
	}
	return 0
}

// splitLlama3 implements llama3Pattern. The regex alternatives are tried in
// order at the start of s and the first that matches wins, each greedy:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)  1: apostrophe + contraction, any case
//	[^\r\n\p{L}\p{N}]?\p{L}+       2: letters, optionally after one char that
//	                                  is not CR, LF, letter or number
//	\p{N}{1,3}                     3: one to three numbers
//	 ?[^\s\p{L}\p{N}]+[\r\n]*      4: optional space, a run of "other"
//	                                  characters, then any CR/LF
//	\s*[\r\n]+                     5: whitespace up to and including the last
//	                                  CR/LF of the whitespace run
//	\s+(?!\S)                      6: a whitespace run that ends the text, or
//	                                  all of it but its last char (which then
//	                                  starts the next piece) if that leaves one
//	\s+                            7: a single whitespace char before \S
func splitLlama3(s string) int {
	r0, n0 := utf8.DecodeRuneInString(s)
	if r0 == '\'' { // 1
		if n := contraction(s[1:], true); n > 0 {
			return 1 + n
		}
	}
	if isL(r0) { // 2, without the optional char
		return n0 + runOf(s[n0:], isL)
	}
	if r0 != '\r' && r0 != '\n' && !isN(r0) && n0 < len(s) { // 2, with it
		if r1, n1 := utf8.DecodeRuneInString(s[n0:]); isL(r1) {
			return n0 + n1 + runOf(s[n0+n1:], isL)
		}
	}
	if isN(r0) { // 3
		n := n0
		for k := 1; k < 3 && n < len(s); k++ {
			r, m := utf8.DecodeRuneInString(s[n:])
			if !isN(r) {
				break
			}
			n += m
		}
		return n
	}
	if n := otherRun(s); n > 0 { // 4
		return n + runOf(s[n:], func(r rune) bool { return r == '\r' || r == '\n' })
	}
	return whitespace(s, true) // 5, 6, 7: r0 is whitespace here
}

// splitQwen implements qwenPattern. It differs from llama3Pattern only in
// alternative 3, which is the one that matches at a number (alternatives 1
// and 2 need an apostrophe or a letter, or a non-number before one).
func splitQwen(s string) int {
	if r0, n0 := utf8.DecodeRuneInString(s); isN(r0) {
		return n0
	}
	return splitLlama3(s)
}

// otherRun matches " ?[^\s\p{L}\p{N}]+" at the start of s.
func otherRun(s string) int {
	start := 0
	if s[0] == ' ' {
		start = 1
	}
	n := runOf(s[start:], isOther)
	if n == 0 {
		return 0
	}
	return start + n
}

// whitespace matches the whitespace alternatives at the start of s, which
// begins with a whitespace char: with lineBreaks first \s*[\r\n]+, then
// \s+(?!\S), then \s+.
func whitespace(s string, lineBreaks bool) int {
	w := runOf(s, isS)
	if lineBreaks {
		for i := w - 1; i >= 0; i-- {
			if s[i] == '\r' || s[i] == '\n' {
				return i + 1
			}
		}
	}
	if w == len(s) {
		return w
	}
	if _, last := utf8.DecodeLastRuneInString(s[:w]); last < w {
		return w - last
	}
	return w
}

// splitGPT2 implements gpt2Pattern:
//
//	's|'t|'re|'ve|'m|'ll|'d   1: apostrophe + lower-case contraction
//	 ?\p{L}+                  2: optional space, letters
//	 ?\p{N}+                  3: optional space, numbers
//	 ?[^\s\p{L}\p{N}]+        4: optional space, "other" characters
//	\s+(?!\S)                 5: as alternative 6 of splitLlama3
//	\s+                       6: as alternative 7 of splitLlama3
func splitGPT2(s string) int {
	if s[0] == '\'' { // 1
		if n := contraction(s[1:], false); n > 0 {
			return 1 + n
		}
	}
	start := 0
	if s[0] == ' ' && len(s) > 1 {
		start = 1
	}
	r, _ := utf8.DecodeRuneInString(s[start:])
	switch {
	case isL(r): // 2
		return start + runOf(s[start:], isL)
	case isN(r): // 3
		return start + runOf(s[start:], isN)
	case isOther(r): // 4
		return start + runOf(s[start:], isOther)
	}
	return whitespace(s, false) // 5, 6
}
