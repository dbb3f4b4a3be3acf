package json

import (
	stdjson "encoding/json"
	"fmt"
	"math/big"
	"net/mail"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// validate checks v, decoded with UseNumber, against schema s, written
// independently of the controller: the reference for its tests. root
// resolves $ref. Undeclared properties are refused where "properties"
// is given and "additionalProperties" is not, as the controller does,
// except inside allOf, anyOf and oneOf, which follow JSON Schema.
func validate(s any, v any, root map[string]any) error {
	return validateStrict(s, v, root, true)
}

func validateStrict(s any, v any, root map[string]any, strict bool) error {
	if b, ok := s.(bool); ok {
		if !b {
			return fmt.Errorf("false schema")
		}
		return nil
	}
	m := s.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		var target any = root
		ptr, _ := url.PathUnescape(strings.TrimPrefix(ref, "#"))
		if ptr != "" {
			for _, part := range strings.Split(ptr[1:], "/") {
				part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
				switch t := target.(type) {
				case map[string]any:
					target = t[part]
				case []any:
					i, _ := strconv.Atoi(part)
					target = t[i]
				}
			}
		}
		if err := validateStrict(target, v, root, strict); err != nil {
			return err
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		for i, b := range all {
			if err := validateStrict(b, v, root, false); err != nil {
				return fmt.Errorf("allOf %d: %w", i, err)
			}
		}
	}
	if anyOf, ok := m["anyOf"].([]any); ok {
		if !slices.ContainsFunc(anyOf, func(b any) bool { return validateStrict(b, v, root, false) == nil }) {
			return fmt.Errorf("%v matches no anyOf branch", v)
		}
	}
	if oneOf, ok := m["oneOf"].([]any); ok {
		n := 0
		for _, b := range oneOf {
			if validateStrict(b, v, root, false) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%v matches %d oneOf branches", v, n)
		}
	}
	if err := validateType(m, v); err != nil {
		return err
	}
	var enum []any
	if e, ok := m["enum"].([]any); ok {
		enum = e
	}
	if c, ok := m["const"]; ok {
		enum = append(enum, c)
	}
	if enum != nil && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, v) || sameValue(e, v) }) {
		return fmt.Errorf("%v not in enum %v", v, enum)
	}
	switch v := v.(type) {
	case stdjson.Number:
		x, ok := new(big.Rat).SetString(string(v))
		if !ok {
			return fmt.Errorf("bad number %s", v)
		}
		for k, ok := range map[string]func(int) bool{"minimum": func(c int) bool { return c >= 0 }, "maximum": func(c int) bool { return c <= 0 },
			"exclusiveMinimum": func(c int) bool { return c > 0 }, "exclusiveMaximum": func(c int) bool { return c < 0 }} {
			if b, has := m[k].(stdjson.Number); has {
				y, _ := new(big.Rat).SetString(string(b))
				if !ok(x.Cmp(y)) {
					return fmt.Errorf("%s breaks %s %s", v, k, b)
				}
			}
		}
		if b, has := m["multipleOf"].(stdjson.Number); has {
			y, _ := new(big.Rat).SetString(string(b))
			if !new(big.Rat).Quo(x, y).IsInt() {
				return fmt.Errorf("%s is not a multiple of %s", v, b)
			}
		}
	case string:
		if p, ok := m["pattern"].(string); ok {
			re, err := regexp2.Compile(p, regexp2.ECMAScript)
			if err != nil {
				return err
			}
			if ok, err := re.MatchString(v); err != nil || !ok {
				return fmt.Errorf("%q does not match %s", v, p)
			}
		}
		if f, ok := m["format"].(string); ok {
			if err := validateFormat(f, v); err != nil {
				return err
			}
		}
		n := utf8.RuneCountInString(v)
		if min, ok := num(m, "minLength"); ok && n < min {
			return fmt.Errorf("%q shorter than %d", v, min)
		}
		if max, ok := num(m, "maxLength"); ok && n > max {
			return fmt.Errorf("%q longer than %d", v, max)
		}
	case []any:
		if min, ok := num(m, "minItems"); ok && len(v) < min {
			return fmt.Errorf("%d items, fewer than %d", len(v), min)
		}
		if max, ok := num(m, "maxItems"); ok && len(v) > max {
			return fmt.Errorf("%d items, more than %d", len(v), max)
		}
		// A tuple: prefixItems and items (draft 2020-12), or items as an
		// array and additionalItems (earlier drafts).
		var prefix []any
		rest, hasRest := m["items"]
		if p, ok := m["prefixItems"].([]any); ok {
			prefix = p
		} else if p, ok := rest.([]any); ok {
			prefix = p
			rest, hasRest = m["additionalItems"]
		}
		for i, item := range v {
			sub, ok := rest, hasRest
			if i < len(prefix) {
				sub, ok = prefix[i], true
			}
			if !ok {
				continue
			}
			if err := validateStrict(sub, item, root, strict); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
	case map[string]any:
		return validateObject(m, v, root, strict)
	}
	return nil
}

// validateFormat checks the formats the controller enforces, with the
// standard library's parsers.
func validateFormat(f, v string) error {
	var err error
	switch f {
	case "date":
		_, err = time.Parse(time.DateOnly, v)
	case "time":
		_, err = time.Parse("2006-01-02T"+"15:04:05.999999999Z07:00", "2000-01-01T"+v)
	case "date-time":
		_, err = time.Parse(time.RFC3339Nano, v)
	case "ipv4":
		var a netip.Addr
		if a, err = netip.ParseAddr(v); err == nil && !a.Is4() {
			err = fmt.Errorf("not IPv4")
		}
	case "uuid":
		if len(v) != 36 || strings.Count(v, "-") != 4 || v[8] != '-' || v[13] != '-' || v[18] != '-' || v[23] != '-' {
			err = fmt.Errorf("not a uuid")
		}
	case "email":
		var a *mail.Address
		if a, err = mail.ParseAddress(v); err == nil && a.Address != v {
			err = fmt.Errorf("not a bare address")
		}
	default:
		err = fmt.Errorf("unknown format")
	}
	if err != nil {
		return fmt.Errorf("%q is not a %s: %v", v, f, err)
	}
	return nil
}

func validateType(m map[string]any, v any) error {
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	default:
		return nil
	}
	var got string
	switch v := v.(type) {
	case map[string]any:
		got = "object"
	case []any:
		got = "array"
	case string:
		got = "string"
	case stdjson.Number:
		got = "number"
		if !strings.ContainsAny(string(v), ".eE") && slices.Contains(types, "integer") {
			got = "integer"
		}
	case bool:
		got = "boolean"
	case nil:
		got = "null"
	}
	if !slices.Contains(types, got) {
		return fmt.Errorf("%v is a %s, want %v", v, got, types)
	}
	return nil
}

func validateObject(m map[string]any, v map[string]any, root map[string]any, strict bool) error {
	props, _ := m["properties"].(map[string]any)
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if _, ok := v[r.(string)]; !ok {
				return fmt.Errorf("required %q missing", r)
			}
		}
	}
	for k, val := range v {
		sub, ok := props[k]
		if !ok {
			extra, has := m["additionalProperties"]
			switch {
			case !has && props != nil && strict:
				return fmt.Errorf("undeclared property %q", k)
			case !has:
				continue
			}
			sub = extra
		}
		if err := validateStrict(sub, val, root, strict); err != nil {
			return fmt.Errorf("property %q: %w", k, err)
		}
	}
	return nil
}

func num(m map[string]any, key string) (int, bool) {
	n, ok := m[key].(stdjson.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return int(i), err == nil
}

// decodeOne decodes exactly one JSON value, refusing duplicate keys (the
// controller never writes them).
func decodeOne(text []byte) (any, error) {
	if !stdjson.Valid(text) {
		return nil, fmt.Errorf("invalid JSON")
	}
	dec := stdjson.NewDecoder(strings.NewReader(string(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, noDuplicates(text)
}

// noDuplicates walks the tokens of text and fails on a repeated key.
func noDuplicates(text []byte) error {
	dec := stdjson.NewDecoder(strings.NewReader(string(text)))
	type obj struct {
		keys   map[string]bool
		expect bool // next string token is a key
	}
	var stack []*obj
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case stdjson.Delim:
			switch t {
			case '{':
				if top != nil && top.keys != nil {
					top.expect = true
				}
				stack = append(stack, &obj{keys: map[string]bool{}, expect: true})
			case '[':
				if top != nil && top.keys != nil {
					top.expect = true
				}
				stack = append(stack, &obj{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.keys != nil && top.expect {
				if top.keys[t] {
					return fmt.Errorf("duplicate key %q", t)
				}
				top.keys[t] = true
				top.expect = false
				continue
			}
			if top != nil && top.keys != nil {
				top.expect = true
			}
		default:
			if top != nil && top.keys != nil {
				top.expect = true
			}
		}
	}
}
