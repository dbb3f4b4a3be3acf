package tokenizer

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The vocabulary and the merge list are most of a tokenizer.json (128,256
// and 280,147 entries for Llama 3), and decoding them into a map through
// reflection was most of its load time (0.45 s of a 0.5 s load). Their
// UnmarshalJSON methods read the common shape directly — plain strings,
// integers — and hand anything else (escapes, other number forms, the
// pair form of merges) to encoding/json, which has already checked that
// the value is valid JSON before it calls them.

// vocabJSON is the model's token → id object.
type vocabJSON map[string]int32

// UnmarshalJSON reads {"token": id, ...}.
func (v *vocabJSON) UnmarshalJSON(data []byte) error {
	if m, ok := scanVocab(data); ok {
		*v = m
		return nil
	}
	return json.Unmarshal(data, (*map[string]int32)(v))
}

// scanVocab reads a vocabulary object whose keys have no escapes and whose
// values are non-negative integers that fit an int32, or reports !ok.
func scanVocab(data []byte) (vocabJSON, bool) {
	s := scanner{data: data}
	if !s.byte('{') {
		return nil, false
	}
	m := make(vocabJSON, bytes.Count(data, []byte(`":`)))
	if s.byte('}') {
		return m, s.end()
	}
	for {
		key, _, ok := s.str()
		if !ok || !s.byte(':') {
			return nil, false
		}
		id, ok := s.uint31()
		if !ok {
			return nil, false
		}
		m[string(key)] = id
		if s.byte('}') {
			return m, s.end()
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

// UnmarshalJSON accepts both forms of the merge list.
func (ms *mergesJSON) UnmarshalJSON(data []byte) error {
	if list, ok := scanMerges(data); ok {
		*ms = list
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return json.Unmarshal(data, (*[][2]string)(ms))
	}
	return ms.fromStrings(list)
}

// fromStrings splits "left right" merges.
func (ms *mergesJSON) fromStrings(list []string) error {
	*ms = make(mergesJSON, len(list))
	for i, s := range list {
		l, r, ok := strings.Cut(s, " ")
		if !ok || strings.Contains(r, " ") {
			return mergeError(i, s)
		}
		(*ms)[i] = [2]string{l, r}
	}
	return nil
}

// scanMerges reads a list of "left right" strings without escapes, each
// with exactly one space, or reports !ok (the caller then says which merge
// is malformed).
func scanMerges(data []byte) (mergesJSON, bool) {
	s := scanner{data: data}
	if !s.byte('[') {
		return nil, false
	}
	list := make(mergesJSON, 0, bytes.Count(data, []byte(`",`))+1)
	if s.byte(']') {
		return list, s.end()
	}
	// One copy of the list, which the pairs' strings are cut from, instead
	// of two allocations a merge (the list lives only while the merge
	// table is built).
	text := string(data)
	for {
		b, at, ok := s.str()
		if !ok {
			return nil, false
		}
		str := string(b) // decoded: escapes or invalid UTF-8
		if at >= 0 {
			str = text[at : at+len(b)]
		}
		l, r, ok := strings.Cut(str, " ")
		if !ok || strings.Contains(r, " ") {
			return nil, false
		}
		list = append(list, [2]string{l, r})
		if s.byte(']') {
			return list, s.end()
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

// scanner walks valid JSON (encoding/json has checked it).
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) && (s.data[s.i] == ' ' || s.data[s.i] == '\n' || s.data[s.i] == '\t' || s.data[s.i] == '\r') {
		s.i++
	}
}

// byte consumes c after any space.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.data)
}

// str reads a string as its bytes: aliasing data from offset at when it
// has no escapes and is valid UTF-8, else decoded by encoding/json (which
// also replaces invalid UTF-8; at is then -1).
func (s *scanner) str() (b []byte, at int, ok bool) {
	if !s.byte('"') {
		return nil, -1, false
	}
	start, escaped, ascii := s.i, false, true
	for s.i < len(s.data) {
		switch c := s.data[s.i]; {
		case c == '"':
			s.i++
			b := s.data[start : s.i-1]
			if !escaped && (ascii || utf8.Valid(b)) {
				return b, start, true
			}
			b, ok := s.decode(start - 1)
			return b, -1, ok
		case c == '\\':
			s.i++ // the escaped byte cannot end the string
			escaped = true
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return nil, -1, false
}

// decode has encoding/json decode the string literal from start to s.i.
func (s *scanner) decode(start int) ([]byte, bool) {
	var v string
	if json.Unmarshal(s.data[start:s.i], &v) != nil {
		return nil, false
	}
	return []byte(v), true
}

// uint31 reads a decimal integer in [0, 2³¹) without sign, fraction or
// exponent, or reports !ok.
func (s *scanner) uint31() (int32, bool) {
	s.space()
	start := s.i
	var n int64
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		n = n*10 + int64(s.data[s.i]-'0')
		if n >= 1<<31 {
			return 0, false
		}
		s.i++
	}
	if s.i == start || s.data[start] == '0' && s.i-start > 1 {
		return 0, false
	}
	if s.i < len(s.data) && (s.data[s.i] == '.' || s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		return 0, false
	}
	return int32(n), true
}
