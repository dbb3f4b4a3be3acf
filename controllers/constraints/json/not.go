package json

import (
	"fmt"
	"slices"
)

// notTypes reads "not", which the controller enforces where it takes
// away types: not of a schema of only "type", "not" and annotations
// (true and {} accept every type, false none; a "not" inside takes its
// types away) takes away the types that schema accepts (number takes
// integers too). Any other "not" refuses the schema, naming it.
func notTypes(v any, at string) (uint8, error) {
	if ty, ok, err := typesOnly(v, at+"/not"); err != nil || ok {
		return ty, err
	}
	return 0, fmt.Errorf("schema %s: keyword \"not\" is enforced only as not of types (such as {\"not\":{\"type\":\"null\"}}) or of required properties, so the schema is refused", at)
}

// typesOnly returns the types schema v accepts where it says no more than
// which (ok false where it says more, or where they are numbers that are
// not integers, which a type set cannot hold).
func typesOnly(v any, at string) (ty uint8, ok bool, err error) {
	switch v := v.(type) {
	case bool:
		if v {
			return tAny, true, nil
		}
		return 0, true, nil
	case map[string]any:
		for k := range v {
			if k != "type" && k != "not" && !slices.Contains(annotations, k) {
				return 0, false, nil
			}
		}
		ty = tAny
		if _, typed := v["type"]; typed {
			if ty, err = types(v, at); err != nil {
				return 0, false, err
			}
			if ty&tNumber != 0 {
				ty |= tInteger
			}
		}
		if ns, ok := v["not"]; ok {
			ex, ok, err := typesOnly(ns, at+"/not")
			if !ok || err != nil || ex&tInteger != 0 && ex&tNumber == 0 && ty&tNumber != 0 {
				return 0, false, err
			}
			ty &^= ex
		}
		return ty, true, nil
	}
	return 0, false, nil
}

// maxConflicts bounds the sets of properties a not of required ones
// forbids.
const maxConflicts = 64

// presence reads a schema that tests only which properties an object has
// (required, allOf and anyOf of such, annotations; "type": "object" at its
// top): the sets of names any of which, all present, pass it (an
// expression in disjunctive form). objectOnly reports the "type":
// "object" that makes a value of another type fail it; ok is false for a
// schema that tests more.
func presence(v any) (dnf [][]string, objectOnly, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, false, false
	}
	if t, typed := m["type"]; typed {
		if t != "object" && !(slices.Equal(asStrings(t), []string{"object"})) {
			return nil, false, false
		}
		objectOnly = true
	}
	dnf = [][]string{{}}
	and := func(other [][]string) bool {
		var out [][]string
		for _, a := range dnf {
			for _, b := range other {
				out = append(out, append(slices.Clone(a), b...))
			}
		}
		dnf = out
		return len(dnf) <= maxConflicts
	}
	for k, w := range m {
		switch {
		case k == "type", slices.Contains(annotations, k):
		case k == "required":
			names := asStrings(w)
			if names == nil {
				return nil, false, false
			}
			if !and([][]string{names}) {
				return nil, false, false
			}
		case k == "allOf" || k == "anyOf":
			list, _ := w.([]any)
			if len(list) == 0 {
				return nil, false, false
			}
			var union [][]string
			for _, sub := range list {
				d, subObj, ok := presence(sub)
				if !ok || subObj {
					return nil, false, false
				}
				if k == "allOf" && !and(d) {
					return nil, false, false
				}
				union = append(union, d...)
			}
			if k == "anyOf" && (len(union) > maxConflicts || !and(union)) {
				return nil, false, false
			}
		default:
			return nil, false, false
		}
	}
	return dnf, objectOnly, true
}

// asStrings reads a list of strings (nil for anything else).
func asStrings(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}
