package json

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The keywords a schema may use. The enforced ones change what is
// valid, and the compiler enforces each. The annotations never do (JSON
// Schema's meta-data and content keywords): they are ignored. The
// unenforced ones change what is valid in some draft of JSON Schema (or
// in OpenAPI's schemas) and are not enforced: a schema that uses one is
// refused, naming it. Any other keyword is ignored, as JSON Schema says
// (vendors' keywords: Snowplow's "self", "x-…", "_…", "@type"), unless it looks
// like one of the enforced or unenforced ones misspelled (the same but
// for case, or one or two letters off, such as maxLenght or
// additonalProperties): that refuses the schema, since ignoring it would
// let through replies its author means to refuse.
var (
	enforced = []string{"type", "enum", "const", "properties", "required", "additionalProperties",
		"items", "minItems", "maxItems", "minLength", "maxLength", "$ref", "$defs", "definitions",
		"allOf", "anyOf", "oneOf", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
		"exclusiveMaximum", "multipleOf", "minProperties", "maxProperties", "dependentRequired", "dependencies", "not",
		"prefixItems", "additionalItems", "patternProperties", "propertyNames", "uniqueItems"}
	annotations = []string{"$schema", "$comment", "title", "description", "default", "examples",
		"deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType", "$anchor", "$dynamicAnchor",
		"$recursiveAnchor", "$vocabulary"}
	unenforced = []string{"contains", "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems",
		"dependentSchemas", "if", "then", "else", "$dynamicRef", "$recursiveRef", "extends", "disallow",
		"divisibleBy", "nullable", "$id", "id"}
)

// checkKeywords refuses a schema object that uses a keyword it may not
// (at names it): an unenforced one, or an unknown one that looks like a
// known one misspelled. $id (draft-04's id) is taken at the root, and
// in a schema with no $ref below it, where it cannot move a $ref's base.
func checkKeywords(s map[string]any, at string) error {
	for _, k := range slices.Sorted(maps.Keys(s)) {
		switch {
		case slices.Contains(enforced, k), slices.Contains(annotations, k), k == presenceKey:
		case k == "$id" || k == "id":
			if _, ok := s[k].(string); !ok {
				return fmt.Errorf("schema %s: keyword %q must be a string", at, k)
			}
			if at != "#" && hasRef(s) {
				return fmt.Errorf("schema %s: keyword %q beside a $ref below it is not enforced by the json controller (it would move the base the $ref is read from), so the schema is refused", at, k)
			}
		case slices.Contains(unenforced, k):
			return fmt.Errorf("schema %s: keyword %q is not enforced by the json controller, so the schema is refused rather than replies that break it allowed (it enforces %s)",
				at, k, strings.Join(enforced, ", "))
		default:
			if like := misspelt(k); like != "" {
				return fmt.Errorf("schema %s: keyword %q is not one JSON Schema knows, and looks like %q misspelled: the schema is refused rather than the keyword ignored", at, k, like)
			}
		}
	}
	return nil
}

// hasRef reports whether schema v holds a $ref anywhere below it.
func hasRef(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, w := range v {
			if k == "$ref" || hasRef(w) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, hasRef)
	}
	return false
}

// misspelt returns the enforced or unenforced keyword that k, a keyword
// JSON Schema does not know, looks like misspelled ("" for none): the same
// but for case, or within one edit (two for keywords of eight letters
// or more; none for those of three or fewer). A name that starts with
// "_", "x-" or "@" (JSON-LD's) is a deliberate extension, never a
// misspelling.
func misspelt(k string) string {
	if strings.HasPrefix(k, "_") || strings.HasPrefix(k, "x-") || strings.HasPrefix(k, "@") {
		return ""
	}
	lk := strings.ToLower(k)
	for _, list := range [][]string{enforced, unenforced} {
		for _, kw := range list {
			allowed := 1
			switch n := len(kw); {
			case n <= 3:
				allowed = 0
			case n >= 8:
				allowed = 2
			}
			if editDistance(lk, strings.ToLower(kw)) <= allowed {
				return kw
			}
		}
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance of a and b (optimal
// string alignment: a swap of two neighbours counts one).
func editDistance(a, b string) int {
	if d := len(a) - len(b); d > 2 || d < -2 {
		return 3 // more than any caller allows
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
