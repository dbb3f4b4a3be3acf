package config

import (
	"bytes"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// unknownKey is the first key of a TOML document that a struct has no
// field for, found with go-toml's parser before the strict decoder runs.
// The decoder finds unknown keys too, but it describes every one of
// them, each time scanning the document for its line: the work grows
// with the square of their number (20,000 keys took 26 s to refuse).
type unknownKey struct {
	line int
	key  string
}

// firstUnknownKey walks data's tables and key/values in order and stops
// at the first key that t (a struct type, through its toml tags) lacks.
// It returns nil when every key is known or the document does not parse;
// the decoder then reports the syntax or type error.
func firstUnknownKey(data []byte, t reflect.Type) *unknownKey {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyPath(e)
			if u := lookup(data, t, table, e); u != nil {
				return u
			}
		case unstable.KeyValue:
			if u := checkKeyValue(data, t, table, e); u != nil {
				return u
			}
		}
	}
	return nil
}

// checkKeyValue checks a key/value under the path prefix, and the keys
// of an inline table value.
func checkKeyValue(data []byte, t reflect.Type, prefix []string, kv *unstable.Node) *unknownKey {
	path := append(append([]string(nil), prefix...), keyPath(kv)...)
	if u := lookup(data, t, path, kv); u != nil {
		return u
	}
	if v := kv.Value(); v.Kind == unstable.InlineTable {
		for it := v.Children(); it.Next(); {
			if u := checkKeyValue(data, t, path, it.Node()); u != nil {
				return u
			}
		}
	}
	return nil
}

func keyPath(n *unstable.Node) []string {
	var path []string
	for it := n.Key(); it.Next(); {
		path = append(path, string(it.Node().Data))
	}
	return path
}

// lookup follows path through t's fields; the first segment with no
// field is unknown. A path that goes on below a non-struct field is left
// to the decoder, which reports the wrong type.
func lookup(data []byte, t reflect.Type, path []string, at *unstable.Node) *unknownKey {
	for i, name := range path {
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := field(t, name)
		if !ok {
			return &unknownKey{line: lineOf(data, at), key: strings.Join(path[:i+1], ".")}
		}
		t = f
	}
	return nil
}

// field finds the type of the field of struct t whose toml tag is name.
func field(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// lineOf is the 1-based line where the key of n starts.
func lineOf(data []byte, n *unstable.Node) int {
	it := n.Key()
	if !it.Next() {
		return 0
	}
	off := it.Node().Raw.Offset
	return 1 + bytes.Count(data[:off], []byte("\n"))
}
