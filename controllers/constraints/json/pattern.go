package json

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/controllers/constraints/regex"
)

// A string's pattern (and format) is a regex DFA (the regex controller's)
// run over the string's decoded characters: a plain character's bytes
// as they come, an escape's character once it is complete (\n as a
// newline, \u00e9 as é). \u escapes of surrogates are refused in such a
// string (a character beyond U+FFFF is written as itself), so that every
// escape decodes to one whole character. The closing quote needs a
// matching state.

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

// Formats enforced as patterns, in Go's syntax, matching whole strings
// (the DFA matches whole texts):
// each a subset of what the format allows, so that every string written
// is valid for a validator that asserts formats. Approximate, in that they
// refuse some valid values: date (29 February, in any year), time and
// date-time (leap seconds, lowercase t and z), email (quoted local parts,
// IP-literal domains, characters outside letters, digits and "_%+-",
// more than two dots before the @ or three after it, parts longer than
// 20 characters before it and 32 after: a subset of RFC 5321's
// addresses that validators take).
var formats = map[string]string{
	"date":      dateRe,
	"time":      timeRe,
	"date-time": dateRe + `T` + timeRe,
	"uuid":      `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
	"ipv4":      octet + `\.` + octet + `\.` + octet + `\.` + octet,
	"email":     `(?:` + atom + `\.){0,2}` + atom + `@` + label + `(?:\.` + label + `){1,3}`,
	// RFC 3986 URIs without userinfo or IP literals, and hosts of
	// unreserved characters only (Go's url.Parse, which some validators
	// use, refuses a host's %-escapes of ASCII).
	"uri":           uriRe,
	"uri-reference": `(?:` + uriRe + `|(?://` + uriHost + uriPath + `|/(?:` + uriPchar + `+` + uriPath + `)?|` + uriSegNC + `+` + uriPath + `)?` + uriTail + `)`,
	// RFC 1123 names without a trailing dot (253 characters at most: the
	// string's maxLength).
	"hostname": hostLabel + `(?:\.` + hostLabel + `)*`,
	// OpenAPI's base64.
	"byte": `(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?`,
}

// anyFormats are OpenAPI's formats that constrain no string (a hint to a
// form, or the data's meaning); numFormats its formats of numbers, each
// an integer range or none (fill enforces them).
var (
	anyFormats = []string{"binary", "password"}
	numFormats = map[string][2]string{"int32": {"-2147483648", "2147483647"}, "int64": {"-9223372036854775808", "9223372036854775807"}, "float": {}, "double": {}}
)

const (
	dateRe = `[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))`
	timeRe = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:Z|[+\-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	octet  = `(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	// Short enough that every address keeps RFC 5321's limits: a local
	// part of at most 64 characters, labels of at most 63, 254 in all.
	atom  = `[A-Za-z0-9_%+\-]{1,20}`
	label = `[A-Za-z0-9](?:[A-Za-z0-9\-]{0,30}[A-Za-z0-9])?`

	uriPct    = `%[0-9A-Fa-f]{2}`
	uriPchar  = `(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|` + uriPct + `)`
	uriSegNC  = `(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|` + uriPct + `)` // no colon: a relative path's first segment
	uriHost   = `[A-Za-z0-9\-._~]*(?::[0-9]*)?`
	uriPath   = `(?:/` + uriPchar + `*)*`
	uriTail   = `(?:\?(?:` + uriPchar + `|[/?])*)?(?:#(?:` + uriPchar + `|[/?])*)?`
	uriRe     = `[A-Za-z][A-Za-z0-9+.\-]*:(?://` + uriHost + uriPath + `|/(?:` + uriPchar + `+` + uriPath + `)?|` + uriPchar + `+` + uriPath + `)?` + uriTail
	hostLabel = `[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?`
)

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

// formatNames lists the formats enforced, for a refusal.
func formatNames() string {
	var names []string
	for name := range formats {
		names = append(names, name)
	}
	for name := range numFormats {
		names = append(names, name)
	}
	names = append(names, anyFormats...)
	slices.Sort(names)
	return strings.Join(names, ", ")
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
