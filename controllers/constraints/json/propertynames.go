package json

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/controllers/constraints/regex"
)

// nameRules reads propertyNames (v; nil when absent): the schema every
// property name must be valid for. It is enforced where it is a string
// schema of type, pattern, format, minLength, maxLength, const and enum
// (with annotations, and allOf of such schemas, as merging writes them):
// each becomes an expression in Go's syntax that a name's decoded
// characters must match whole. none reports a schema no name is valid
// for (false, a type without string, an enum of no string).
func nameRules(v any, at string) (rules []string, none bool, err error) {
	switch v := v.(type) {
	case nil:
		return nil, false, nil
	case bool:
		return nil, !v, nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			switch {
			case slices.Contains(annotations, k):
			case k == "allOf":
				list, _ := v[k].([]any)
				for i, sub := range list {
					r, no, err := nameRules(sub, fmt.Sprintf("%s/allOf/%d", at, i))
					if err != nil || no {
						return nil, no, err
					}
					rules = append(rules, r...)
				}
			case k == "type":
				ty, err := types(v, at)
				if err != nil {
					return nil, false, err
				}
				if ty&tString == 0 {
					return nil, true, nil
				}
			case k == "format", k == "pattern":
				parts, err := patternExprs(map[string]any{k: v[k]}, at)
				if err != nil {
					return nil, false, err
				}
				rules = append(rules, parts...)
			case k == "minLength", k == "maxLength":
				i, ok := count(v[k])
				if !ok {
					return nil, false, fmt.Errorf("schema %s: %s must be a non-negative integer", at, k)
				}
				switch {
				case k == "maxLength":
					// Go's expressions count to 1000: a longer name is
					// not written (stricter, as a lower maximum is).
					rules = append(rules, fmt.Sprintf(`(?s:.){0,%d}`, min(i, 1000)))
				case i > 1000:
					return nil, false, fmt.Errorf("schema %s: minLength above 1000 is not enforced on property names", at)
				default:
					rules = append(rules, fmt.Sprintf(`(?s:.){%d}(?s:.*)`, i))
				}
			case k == "const", k == "enum":
				values := []any{v[k]}
				if k == "enum" {
					if values, _ = v[k].([]any); values == nil {
						return nil, false, fmt.Errorf("schema %s: enum must be an array", at)
					}
				}
				var alts []string
				for _, e := range values {
					if s, ok := e.(string); ok {
						var q strings.Builder
						for _, r := range s {
							q.WriteString(quoteRune(r)) // not regexp.QuoteMeta: regexp would add 300 KB to the Wasm
						}
						alts = append(alts, q.String())
					}
				}
				if len(alts) == 0 {
					return nil, true, nil // no value is a name
				}
				rules = append(rules, `(?:`+strings.Join(alts, `|`)+`)`)
			default:
				return nil, false, fmt.Errorf("schema %s: keyword %q is not enforced in propertyNames by the json controller (it enforces type, pattern, format, minLength, maxLength, const and enum there), so the schema is refused", at, k)
			}
		}
		return rules, false, nil
	}
	return nil, false, fmt.Errorf("schema %s: want an object or a boolean", at)
}

// matchAll reports whether name matches every DFA whole.
func matchAll(dfas []*regex.DFA, name string) bool {
	for _, d := range dfas {
		st, ok := d.Start(), true
		for j := 0; j < len(name) && ok; j++ {
			st, ok = d.Next(st, name[j])
		}
		if !ok || !d.Accepts(st) {
			return false
		}
	}
	return true
}
