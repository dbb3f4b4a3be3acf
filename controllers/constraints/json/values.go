package json

import (
	"bytes"
	stdjson "encoding/json"
	"slices"
	"strconv"
	"strings"
)

// sameValue reports whether two decoded JSON values are equal as JSON
// Schema compares them (numbers by value: 1 and 1.0 are equal).
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case stdjson.Number:
		b, ok := b.(stdjson.Number)
		if !ok {
			return false
		}
		return canonNum(string(a)) == canonNum(string(b))
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, sameValue)
	}
	return a == b
}

// canonNum writes a JSON number as sign, significant digits and
// exponent, so that equal numbers give equal strings (1, 1.0 and 10e-1
// all give "1e0"). An exponent too long to add to is kept as written.
func canonNum(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exps, _ := strings.Cut(strings.ToLower(s), "e")
	exp, err := strconv.ParseInt(exps, 10, 32)
	if exps == "" {
		exp, err = 0, nil
	}
	if err != nil {
		return s
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(ip+fp, "0")
	exp -= int64(len(fp))
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return "0"
	}
	if neg {
		digits = "-" + digits
	}
	return digits + "e" + strconv.FormatInt(exp, 10)
}

// typeOf returns the types a decoded value belongs to.
func typeOf(v any) uint8 {
	switch v := v.(type) {
	case map[string]any:
		return tObject
	case []any:
		return tArray
	case string:
		return tString
	case stdjson.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return tNumber
		}
		return tNumber | tInteger
	case bool:
		return tBoolean
	}
	return tNull
}

// encode writes v as compact JSON without HTML escaping.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := stdjson.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // decoded JSON always encodes
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// keyLit writes a string as a trie of names or excluded values holds it:
// as encode does, but U+2028 and U+2029 raw (encode escapes them), so
// that only the characters JSON must escape are escaped, each one way.
func keyLit(s string) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(encode(s), []byte(`\u2028`), []byte("\u2028")), []byte(`\u2029`), []byte("\u2029"))
}

// lits holds byte tries of literal strings: JSON keywords, enum values
// and property names.
type lits struct {
	edges map[uint64]int32 // node<<8 | byte → child
	term  []int32          // value ending at a node, or -1
	sub   []uint64         // bits of the values below a node (property names)
	wsub  [][]uint64       // the same in the key trie of a wide object (nil elsewhere)
}

func (t *lits) newNode() int32 {
	t.term = append(t.term, -1)
	t.sub = append(t.sub, 0)
	t.wsub = append(t.wsub, nil)
	return int32(len(t.term) - 1)
}

func (t *lits) child(n int32, b byte) int32 {
	if c, ok := t.edges[uint64(n)<<8|uint64(b)]; ok {
		return c
	}
	return -1
}

// add inserts s below root, ending with val and marking bit on its path.
func (t *lits) add(root int32, s []byte, val int32, bit uint64) {
	n := root
	for _, b := range s {
		c := t.child(n, b)
		if c < 0 {
			c = t.newNode()
			t.edges[uint64(n)<<8|uint64(b)] = c
		}
		t.sub[c] |= bit
		n = c
	}
	t.term[n] = val
}

// has reports whether s ends at a value below root.
func (t *lits) has(root int32, s []byte) bool {
	n := root
	for _, b := range s {
		if n = t.child(n, b); n < 0 {
			return false
		}
	}
	return t.term[n] >= 0
}
