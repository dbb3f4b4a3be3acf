package chat

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// filterToJSON is transformers' tojson: Python's
// json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=sort_keys),
// with mappings in their given order.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var indent, ensureASCII, sortKeys *exec.Value
	keep := func(dst **exec.Value) func(*exec.Value) error {
		return func(v *exec.Value) error { *dst = v; return nil }
	}
	if err := params.Take(
		exec.KeywordArgument("indent", exec.AsValue(nil), keep(&indent)),
		exec.KeywordArgument("ensure_ascii", exec.AsValue(false), keep(&ensureASCII)),
		exec.KeywordArgument("sort_keys", exec.AsValue(false), keep(&sortKeys)),
	); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	w := pyJSON{indent: -1, ascii: ensureASCII.IsTrue(), sortKeys: sortKeys.IsTrue()}
	if !indent.IsNil() {
		if !indent.IsInteger() {
			return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("tojson: indent must be an integer, not %s", indent.String())))
		}
		w.indent = max(indent.Integer(), 0)
	}
	if err := w.value(in.Interface(), 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(w.b.String())
}

// pyJSON writes values as Python's json module does: ", " and ": "
// separators without indent, "," and newlines with it.
type pyJSON struct {
	b        strings.Builder
	indent   int // -1: no indentation
	ascii    bool
	sortKeys bool
}

func (w *pyJSON) newline(level int) {
	w.b.WriteByte('\n')
	w.b.WriteString(strings.Repeat(" ", w.indent*level))
}

// item writes the separator before the item at index i and, when
// indenting, its new line.
func (w *pyJSON) item(i, level int) {
	if i > 0 {
		w.b.WriteByte(',')
		if w.indent < 0 {
			w.b.WriteByte(' ')
		}
	}
	if w.indent >= 0 {
		w.newline(level)
	}
}

func (w *pyJSON) close(n, level int, bracket byte) {
	if n > 0 && w.indent >= 0 {
		w.newline(level)
	}
	w.b.WriteByte(bracket)
}

type kv struct {
	key string
	val any
}

func (w *pyJSON) object(pairs []kv, level int) error {
	if w.sortKeys {
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
	}
	w.b.WriteByte('{')
	for i, p := range pairs {
		w.item(i, level+1)
		w.str(p.key)
		w.b.WriteString(": ")
		if err := w.value(p.val, level+1); err != nil {
			return err
		}
	}
	w.close(len(pairs), level, '}')
	return nil
}

func (w *pyJSON) value(v any, level int) error {
	switch v := v.(type) {
	case nil:
		w.b.WriteString("null")
		return nil
	case *exec.Value:
		return w.value(v.Interface(), level)
	case exec.Dict:
		return w.dict(&v, level)
	case *exec.Dict:
		return w.dict(v, level)
	case string:
		w.str(v)
		return nil
	case bool:
		w.b.WriteString(map[bool]string{true: "true", false: "false"}[v])
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		w.b.WriteString(pyFloat(rv.Float()))
	case reflect.String:
		w.str(rv.String())
	case reflect.Bool:
		return w.value(rv.Bool(), level)
	case reflect.Slice, reflect.Array:
		w.b.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			w.item(i, level+1)
			if err := w.value(rv.Index(i).Interface(), level+1); err != nil {
				return err
			}
		}
		w.close(rv.Len(), level, ']')
	case reflect.Map:
		// A Go map has no order: sort its keys.
		pairs := make([]kv, 0, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			pairs = append(pairs, kv{fmt.Sprint(it.Key().Interface()), it.Value().Interface()})
		}
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
		return w.object(pairs, level)
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return w.value(nil, level)
		}
		return w.value(rv.Elem().Interface(), level)
	default:
		return fmt.Errorf("tojson: cannot encode a %T", v)
	}
	return nil
}

func (w *pyJSON) dict(d *exec.Dict, level int) error {
	pairs := make([]kv, len(d.Pairs))
	for i, p := range d.Pairs {
		pairs[i] = kv{p.Key.String(), p.Value}
	}
	return w.object(pairs, level)
}

// str writes a JSON string as Python does: only '"', '\\' and control
// characters are escaped (and, with ensure_ascii, all non-ASCII runes).
func (w *pyJSON) str(s string) {
	w.b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			w.b.WriteString(`\"`)
		case r == '\\':
			w.b.WriteString(`\\`)
		case r == '\n':
			w.b.WriteString(`\n`)
		case r == '\r':
			w.b.WriteString(`\r`)
		case r == '\t':
			w.b.WriteString(`\t`)
		case r == '\b':
			w.b.WriteString(`\b`)
		case r == '\f':
			w.b.WriteString(`\f`)
		case r < 0x20 || (w.ascii && r > 0x7E):
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&w.b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(&w.b, `\u%04x`, r)
			}
		default:
			w.b.WriteRune(r)
		}
	}
	w.b.WriteByte('"')
}

// pyFloat formats f as Python's float repr: the shortest round-tripping
// digits, exponent form below 1e-4 and from 1e16, and always a '.' or 'e'.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
