package json

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Dialects. JSON Schema's patterns are ECMA-262's, but validators run
// them on other engines too (Python's re, .NET's, PCRE), which read \w,
// \d, \s and \b over Unicode where ECMA-262 reads ASCII (or, for \s,
// another Unicode set). So that a string written is valid for each, a
// class is translated to what every reading takes: \d and \w to ASCII,
// \s to the spaces all agree on, and their negations (\D, \W, \S, and
// the positive ones inside a negated class) to the complement of the
// widest reading. \b and \B, on which the readings disagree with no
// common ground, are refused.
const (
	whiteAll  = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}` // in every reading
	whiteAny  = whiteAll + `\x{feff}\x{1c}-\x{1f}\x{85}`                                             // in some reading
	wordAny   = `\p{L}\p{M}\p{N}\p{Pc}`
	digitAny  = `\p{Nd}`
	classWord = `0-9A-Za-z_`
)

// ecmaToGo translates an ECMA-262 regular expression (JSON Schema's
// pattern dialect) into Go's syntax with the same meaning, or refuses it.
// It is an allow-list: literals, groups (non-capturing and named ones),
// alternation, quantifiers, anchors, classes, and the escapes whose
// meaning is the same or can be spelled out (\s, \S, \d, \w, \uXXXX,
// \xHH, \cX, \0, escaped punctuation). Lookarounds, backreferences, \b,
// \p with names Go reads otherwise, and Go-only syntax ((?i), \A, \z,
// [[:alpha:]], \Q...\E) are refused. Differences it bridges: ECMA's "."
// excludes \r, U+2028 and U+2029 besides \n, and its \s takes Unicode
// spaces; the dialects above; a class is written with every literal
// escaped.
func ecmaToGo(p string) (string, error) {
	var out strings.Builder
	inClass, negClass := false, false
	classStart := false // just after [ or [^
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 {
			return "", fmt.Errorf("not valid UTF-8")
		}
		i += size
		if inClass {
			switch {
			case r == ']' && classStart:
				return "", fmt.Errorf("an empty class [] or [^] is not supported")
			case r == ']':
				out.WriteByte(']')
				inClass = false
			case r == '\\':
				esc, n, err := ecmaEscape(p[i:], true, negClass)
				if err != nil {
					return "", err
				}
				out.WriteString(esc)
				i += n
			case r == '-':
				out.WriteByte('-')
			default:
				out.WriteString(quoteRune(r))
			}
			classStart = false
			continue
		}
		switch r {
		case '[':
			inClass, classStart, negClass = true, true, false
			out.WriteByte('[')
			if strings.HasPrefix(p[i:], "^") {
				out.WriteByte('^')
				negClass = true
				i++
			}
		case '.':
			out.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		case '(':
			switch {
			case strings.HasPrefix(p[i:], "?:"):
				out.WriteString("(?:")
				i += 2
			case strings.HasPrefix(p[i:], "?<") && !strings.HasPrefix(p[i:], "?<=") && !strings.HasPrefix(p[i:], "?<!"):
				end := strings.IndexByte(p[i:], '>')
				if end < 0 {
					return "", fmt.Errorf("unterminated group name")
				}
				out.WriteString("(?P<" + p[i+2:i+end] + ">")
				i += end + 1
			case strings.HasPrefix(p[i:], "?"):
				return "", fmt.Errorf("lookarounds and group flags are not supported")
			default:
				out.WriteByte('(')
			}
		case '\\':
			esc, n, err := ecmaEscape(p[i:], false, false)
			if err != nil {
				return "", err
			}
			out.WriteString(esc)
			i += n
		case '{':
			if m := quantifier(p[i:]); m != "" {
				out.WriteString("{" + m)
				i += len(m)
			} else if strings.HasPrefix(p[i:], ",") {
				return "", fmt.Errorf("{,n} is a literal for ECMA-262 and a quantifier for Python: not supported")
			} else {
				out.WriteString(`\{`) // a literal brace (ECMA's Annex B)
			}
		case '^', '$', '|', ')', '*', '+', '?':
			out.WriteRune(r)
		default:
			out.WriteString(quoteRune(r))
		}
	}
	if inClass {
		return "", fmt.Errorf("unterminated class")
	}
	return out.String(), nil
}

// categories are Unicode's general categories that Go knows, by long name.
var categories = map[string]string{
	"Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
	"Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Nonspacing_Mark": "Mn",
	"Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd",
	"Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "Connector_Punctuation": "Pc",
	"Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe",
	"Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po",
	"Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk",
	"Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs", "Line_Separator": "Zl",
	"Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc", "Format": "Cf",
	"Private_Use": "Co", "Surrogate": "Cs",
}

// quantifier returns the rest of a {n}, {n,} or {n,m} quantifier at the
// start of s, after its brace, or "".
func quantifier(s string) string {
	digits := func(i int) int {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := digits(0)
	if i == 0 {
		return ""
	}
	if i < len(s) && s[i] == ',' {
		i = digits(i + 1)
	}
	if i < len(s) && s[i] == '}' {
		return s[:i+1]
	}
	return ""
}

// quoteRune writes r as a Go regexp literal.
func quoteRune(r rune) string {
	if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
		return string(r)
	}
	return fmt.Sprintf(`\x{%x}`, r)
}

// ecmaEscape translates the escape after a backslash, at the start of
// rest, outside a class or inside one (negated or not); it returns Go's
// spelling and the bytes of rest it used.
func ecmaEscape(rest string, inClass, neg bool) (string, int, error) {
	if rest == "" {
		return "", 0, fmt.Errorf("a trailing backslash")
	}
	c := rest[0]
	wrap := func(set string) string {
		if inClass {
			return set
		}
		return "[" + set + "]"
	}
	switch c {
	case 't', 'n', 'r', 'f', 'v':
		return `\` + string(c), 1, nil
	case 'd', 'w', 's':
		set := map[byte][2]string{'d': {"0-9", digitAny}, 'w': {classWord, wordAny}, 's': {whiteAll, whiteAny}}[c]
		if neg {
			return set[1], 1, nil // inside [^...]: the widest reading, left out
		}
		return wrap(set[0]), 1, nil
	case 'D', 'W', 'S':
		if inClass {
			return "", 0, fmt.Errorf(`\%c in a class is not supported`, c)
		}
		set := map[byte]string{'D': digitAny, 'W': wordAny, 'S': whiteAny}[c]
		return "[^" + set + "]", 1, nil
	case 'b':
		if inClass {
			return `\x08`, 1, nil
		}
		return "", 0, fmt.Errorf(`\b (word boundaries) is not supported: validators read it over ASCII (ECMA-262) or Unicode letters`)
	case 'B':
		return "", 0, fmt.Errorf(`\B (word boundaries) is not supported: validators read it over ASCII (ECMA-262) or Unicode letters`)
	case '0':
		if len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' {
			return "", 0, fmt.Errorf("octal escapes are not supported")
		}
		return `\x00`, 1, nil
	case 'x':
		if len(rest) >= 3 && isHex(rest[1]) && isHex(rest[2]) {
			return `\x` + rest[1:3], 3, nil
		}
		return "", 0, fmt.Errorf(`a \x escape needs two hex digits`)
	case 'u':
		if len(rest) >= 5 && isHex(rest[1]) && isHex(rest[2]) && isHex(rest[3]) && isHex(rest[4]) {
			v, _ := strconv.ParseUint(rest[1:5], 16, 32)
			if v >= 0xd800 && v <= 0xdfff {
				return "", 0, fmt.Errorf(`surrogate escapes (\u%s) are not supported`, rest[1:5])
			}
			return fmt.Sprintf(`\x{%x}`, v), 5, nil
		}
		if strings.HasPrefix(rest, "u{") {
			end := strings.IndexByte(rest, '}')
			v, err := strconv.ParseUint(rest[2:max(end, 2)], 16, 32)
			if end < 0 || err != nil || v > utf8.MaxRune || v >= 0xd800 && v <= 0xdfff {
				return "", 0, fmt.Errorf(`bad \u{...} escape`)
			}
			return fmt.Sprintf(`\x{%x}`, v), end + 1, nil
		}
		return "", 0, fmt.Errorf(`a \u escape needs four hex digits`)
	case 'c':
		if len(rest) >= 2 && (rest[1] >= 'a' && rest[1] <= 'z' || rest[1] >= 'A' && rest[1] <= 'Z') {
			return fmt.Sprintf(`\x{%x}`, rest[1]%32), 2, nil
		}
		return "", 0, fmt.Errorf(`bad \c escape`)
	case 'p', 'P':
		// General categories only (L, Lu, Letter, gc=Nd...): Go reads
		// script names and other properties otherwise than ECMA does, or
		// not at all.
		end := strings.IndexByte(rest, '}')
		if len(rest) < 4 || rest[1] != '{' || end < 0 {
			return "", 0, fmt.Errorf(`\p needs braces`)
		}
		name := rest[2:end]
		if _, v, ok := strings.Cut(name, "="); ok && (strings.HasPrefix(name, "gc=") || strings.HasPrefix(name, "General_Category=")) {
			name = v
		}
		if short, ok := categories[name]; ok {
			name = short
		}
		if !slices.Contains(slices.Collect(maps.Values(categories)), name) {
			return "", 0, fmt.Errorf(`\p{%s}: only general categories are supported`, rest[2:end])
		}
		return `\` + string(c) + "{" + name + "}", end + 1, nil
	}
	if c < utf8.RuneSelf && strings.IndexByte(`^$\.*+?()[]{}|/-`, c) >= 0 {
		return quoteRune(rune(c)), 1, nil
	}
	return "", 0, fmt.Errorf(`the escape \%c is not supported`, c)
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}
