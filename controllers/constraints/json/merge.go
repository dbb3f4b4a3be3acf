package json

import (
	"fmt"
	"slices"
	"strings"
)

// mergeSchemas returns the plain schema whose instances are valid for
// both a and b (or fewer: never more), or says which keyword it cannot
// merge.
func mergeSchemas(a, b map[string]any, at string) (map[string]any, error) {
	for _, x := range [][2]map[string]any{{a, b}, {b, a}} {
		if _, ok := x[0]["patternProperties"]; !ok {
			continue
		}
		for _, k := range []string{"properties", "additionalProperties", "patternProperties"} {
			if _, ok := x[1][k]; ok {
				// The other side's additionalProperties would apply to
				// names that match these patterns, and these patterns
				// to its properties: not merged.
				return nil, fmt.Errorf("schema %s: allOf: keyword \"patternProperties\" beside another schema's %q is not enforced", at, k)
			}
		}
	}
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	nothing := false
	for k, v := range b {
		old, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		switch k {
		case "type":
			t := typeSet(old) & typeSet(v)
			if t == 0 {
				nothing = true // no type in common
				delete(out, "type")
				continue
			}
			var names []any
			for name, bit := range typeNames {
				if t&bit != 0 && !(name == "integer" && t&tNumber != 0) {
					names = append(names, name)
				}
			}
			slices.SortFunc(names, func(x, y any) int { return strings.Compare(x.(string), y.(string)) })
			out[k] = names
		case "enum", "const":
			// Below, with the other's.
		case "required":
			x, _ := old.([]any)
			y, _ := v.([]any)
			out[k] = append(slices.Clone(x), y...)
		case "items", "prefixItems", "additionalItems":
			// Below, together.
		case "minItems", "minLength", "maxItems", "maxLength", "minProperties", "maxProperties":
			x, okx := count(old)
			y, oky := count(v)
			if !okx || !oky {
				return nil, fmt.Errorf("schema %s: %s must be a non-negative integer", at, k)
			}
			if strings.HasPrefix(k, "min") == (x < y) {
				out[k] = v
			}
		case "properties", "additionalProperties":
			// Below, together.
		case "uniqueItems":
			out[k] = old == true || v == true
		case presenceKey:
			x, _ := old.([]presenceGroup)
			y, _ := v.([]presenceGroup)
			out[k] = append(slices.Clone(x), y...) // properties refuses more than one
		case "propertyNames":
			out[k] = map[string]any{"allOf": []any{old, v}} // a name must be valid for both
		case "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum":
			x, errx := decimalBound(old)
			y, erry := decimalBound(v)
			if errx != nil || erry != nil {
				return nil, fmt.Errorf("schema %s: keyword %q must be a number", at, k)
			}
			if c := cmpBounds(y, x); strings.HasPrefix(k, "max") || k == "exclusiveMaximum" {
				if c < 0 {
					out[k] = v
				}
			} else if c > 0 {
				out[k] = v
			}
		case "multipleOf", "pattern", "format":
			if old != v {
				return nil, fmt.Errorf("schema %s: allOf: cannot merge two different %q keywords (%v and %v)", at, k, old, v)
			}
		default:
			return nil, fmt.Errorf("schema %s: allOf: cannot merge two %q keywords", at, k)
		}
	}
	if err := mergeEnums(out, a, b, at); err != nil {
		return nil, err
	}
	mergeProperties(out, a, b)
	if err := mergeItems(out, a, b, at); err != nil {
		return nil, err
	}
	if nothing {
		out["enum"] = []any{}
	}
	return out, nil
}

// typeSet reads a "type" value as a set in which number takes integer in.
func typeSet(v any) uint8 {
	var names []any
	switch v := v.(type) {
	case string:
		names = []any{v}
	case []any:
		names = v
	}
	var t uint8
	for _, n := range names {
		s, _ := n.(string)
		t |= typeNames[s]
	}
	if t&tNumber != 0 {
		t |= tInteger
	}
	return t
}

// mergeEnums keeps the values that both a and b allow, as an enum.
func mergeEnums(out, a, b map[string]any, at string) error {
	values := func(s map[string]any) ([]any, bool, error) {
		var vs []any
		e, has := s["enum"]
		if has {
			var ok bool
			if vs, ok = e.([]any); !ok {
				return nil, false, fmt.Errorf("schema %s: enum must be an array", at)
			}
		}
		if v, ok := s["const"]; ok {
			if has && !slices.ContainsFunc(vs, func(e any) bool { return sameValue(e, v) }) {
				return []any{}, true, nil
			}
			return []any{v}, true, nil
		}
		return vs, has, nil
	}
	x, hasX, err := values(a)
	if err != nil {
		return err
	}
	y, hasY, err := values(b)
	if err != nil {
		return err
	}
	delete(out, "const")
	delete(out, "enum")
	switch {
	case hasX && hasY:
		both := []any{}
		for _, v := range x {
			if slices.ContainsFunc(y, func(w any) bool { return sameValue(v, w) }) {
				both = append(both, v)
			}
		}
		out["enum"] = both
	case hasX:
		out["enum"] = x
	case hasY:
		out["enum"] = y
	}
	return nil
}

// mergeProperties merges properties and additionalProperties by JSON
// Schema's rules: a property declared by one side only must also be
// valid for the other's additionalProperties where it gives one. Where
// neither gives additionalProperties, the merged schema declares the
// properties of both, and the controller's default refuses others.
func mergeProperties(out, a, b map[string]any) {
	pa, okA := a["properties"].(map[string]any)
	pb, okB := b["properties"].(map[string]any)
	apA, hasA := a["additionalProperties"]
	apB, hasB := b["additionalProperties"]
	if !okA && !okB && !hasA && !hasB {
		return
	}
	both := func(x, y any) any {
		switch {
		case x == true || x == nil:
			return y
		case y == true || y == nil:
			return x
		case x == false || y == false:
			return false
		}
		return map[string]any{"allOf": []any{x, y}}
	}
	props := map[string]any{}
	for name, s := range pa {
		other, ok := pb[name]
		if !ok {
			other = apB
		}
		props[name] = both(s, other)
	}
	for name, s := range pb {
		if _, ok := pa[name]; !ok {
			props[name] = both(s, apA)
		}
	}
	if okA || okB {
		out["properties"] = props
	}
	switch {
	case hasA && hasB:
		out["additionalProperties"] = both(apA, apB)
	case hasA:
		out["additionalProperties"] = apA
	case hasB:
		out["additionalProperties"] = apB
	}
}
