package json

import (
	"fmt"
	"reflect"
	"slices"
)

// maxInline bounds allOf/anyOf/oneOf compiled within each other without
// a container in between, maxBranches the branches of one union.
const (
	maxInline   = 32
	maxBranches = 64
)

// combined reports whether s is compiled as a combination: allOf, anyOf,
// oneOf, or a $ref beside other keywords (which, since draft 2019-09,
// applies both).
func combined(s map[string]any) bool {
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if _, ok := s[k]; ok {
			return true
		}
	}
	if _, ok := s["$ref"]; ok {
		for k := range s {
			if k != "$ref" && !ignoredBesideRef(k) {
				return true
			}
		}
	}
	return false
}

// ignoredBesideRef reports whether keyword k changes nothing in a
// combination: annotations and unknown keywords (checkKeywords refused
// the misspelled ones already), definitions (reached by pointer), $id.
func ignoredBesideRef(k string) bool {
	return k == "$defs" || k == "definitions" || k == "$id" || k == "id" ||
		!slices.Contains(enforced, k) && !slices.Contains(unenforced, k)
}

// disjunction is an anyOf or a oneOf.
type disjunction struct {
	one      bool
	branches []any
	at       string
}

// combineOnce compiles a combination once: a $ref beside keywords
// that leads back to it (through an object or array) finds the node
// being built, as a plain $ref does.
//
// A combination is found by its text too: merging makes new schema
// objects, and one that leads back to the same merge through a
// container (a recursive schema inside an anyOf beside other keywords)
// would otherwise be compiled again at every level, without end.
func (c *compiler) combineOnce(s map[string]any, at string) (int32, error) {
	key := reflect.ValueOf(s).Pointer()
	if idx, ok := c.combos[key]; ok {
		return idx, nil
	}
	text := string(encode(s))
	if idx, ok := c.combosByText[text]; ok {
		c.combos[key] = idx
		c.kept = append(c.kept, s)
		return idx, nil
	}
	idx := int32(len(c.g.nodes))
	c.combos[key] = idx
	c.combosByText[text] = idx
	c.kept = append(c.kept, s)
	c.g.nodes = append(c.g.nodes, node{pending: true})
	sub, err := c.combine(s, at)
	if err != nil {
		return 0, err
	}
	if c.g.nodes[sub].pending {
		return 0, fmt.Errorf("schema %s: it leads back to itself with no object or array in between", at)
	}
	c.g.nodes[idx] = c.g.nodes[sub]
	return idx, nil
}

// combine compiles a schema object with allOf, anyOf, oneOf or a $ref
// beside other keywords. The conjunction (allOf, the $ref, the other
// keywords) is merged into one plain schema; an anyOf or oneOf in it is
// distributed over (A ∧ (B ∨ C) = (A ∧ B) ∨ (A ∧ C), and the same for
// oneOf when A holds), and the union of the branches compiled.
func (c *compiler) combine(s map[string]any, at string) (int32, error) {
	if c.inline++; c.inline > maxInline {
		return 0, fmt.Errorf("schema %s: allOf/anyOf/oneOf nested more than %d deep, or recursive through $ref with no object or array in between", at, maxInline)
	}
	defer func() { c.inline-- }()
	var plain []map[string]any
	var ors []disjunction
	if err := c.conjuncts(s, at, 0, &plain, &ors); err != nil {
		return 0, err
	}
	merged := map[string]any{}
	for _, p := range plain {
		var err error
		if merged, err = mergeSchemas(merged, p, at); err != nil {
			return 0, err
		}
	}
	// An anyOf or oneOf that tests only which properties an object has
	// becomes a rule of the object (objRules.groups), not branches.
	var groups []presenceGroup
	rest := ors[:0:0]
	for _, d := range ors {
		if g, ok := presenceOf(d); ok {
			groups = append(groups, g)
		} else {
			rest = append(rest, d)
		}
	}
	if ors = rest; len(groups) > 0 {
		merged[presenceKey] = groups
	}
	if len(ors) == 0 {
		return c.object(merged, at+"/allOf")
	}
	d := ors[0]
	if len(d.branches) > maxBranches {
		return 0, fmt.Errorf("schema %s: more than %d branches", d.at, maxBranches)
	}
	var alts []int32
	for i, b := range d.branches {
		sub := b
		if len(merged) > 0 || len(ors) > 1 {
			all := []any{merged, b}
			for _, o := range ors[1:] {
				key := "anyOf"
				if o.one {
					key = "oneOf"
				}
				all = append(all, map[string]any{key: o.branches})
			}
			sub = map[string]any{"allOf": all}
		}
		idx, err := c.schema(sub, fmt.Sprintf("%s/%d", d.at, i))
		if err != nil {
			return 0, err
		}
		alts = append(alts, idx)
	}
	return c.union(alts, d.one, d.at)
}

// conjuncts splits s into the plain schemas and the disjunctions that
// must all hold, following $refs (as copies: the schema is merged) and
// nested allOfs.
func (c *compiler) conjuncts(s map[string]any, at string, hops int, plain *[]map[string]any, ors *[]disjunction) error {
	if hops > maxRefHops {
		return fmt.Errorf("schema %s: allOf and $ref nested more than %d deep (a $ref cycle?)", at, maxRefHops)
	}
	if err := checkKeywords(s, at); err != nil {
		return err
	}
	if err := c.tupleForm(s, at); err != nil {
		return err
	}
	rest := map[string]any{}
	for k, v := range s {
		switch k {
		case "allOf", "anyOf", "oneOf":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return fmt.Errorf("schema %s: %s must be a non-empty array", at, k)
			}
			if k != "allOf" {
				*ors = append(*ors, disjunction{one: k == "oneOf", branches: list, at: at + "/" + k})
				continue
			}
			for i, b := range list {
				if err := c.conjunct(b, fmt.Sprintf("%s/allOf/%d", at, i), hops+1, plain, ors); err != nil {
					return err
				}
			}
		case "$ref":
			name, _ := v.(string)
			target, key, err := c.resolve(name)
			if err != nil {
				return fmt.Errorf("schema %s: $ref %q: %w", at, name, err)
			}
			if err := c.conjunct(target, key, hops+1, plain, ors); err != nil {
				return err
			}
		default:
			if !ignoredBesideRef(k) {
				rest[k] = v
			}
		}
	}
	*plain = append(*plain, rest)
	return nil
}

func (c *compiler) conjunct(b any, at string, hops int, plain *[]map[string]any, ors *[]disjunction) error {
	switch b := b.(type) {
	case bool:
		if !b {
			*plain = append(*plain, map[string]any{"enum": []any{}}) // nothing is valid
		}
		return nil
	case map[string]any:
		return c.conjuncts(b, at, hops, plain, ors)
	}
	return fmt.Errorf("schema %s: want an object or a boolean", at)
}

// presenceKey holds, in a merged schema, the anyOf and oneOf that test
// only which properties an object has ([]presenceGroup): a key no JSON
// schema holds with that value.
const presenceKey = "\x00presence"

// presenceGroup is an anyOf (one false) or oneOf (one true) whose
// branches test only which properties an object has: each branch the
// sets of names any of which, all present, pass it.
type presenceGroup struct {
	one      bool
	branches [][][]string
}

// presenceOf reads d as a presenceGroup, where every branch tests only
// which properties an object has (and says nothing of "type").
func presenceOf(d disjunction) (presenceGroup, bool) {
	g := presenceGroup{one: d.one}
	for _, b := range d.branches {
		dnf, objectOnly, ok := presence(b)
		if !ok || objectOnly {
			return g, false
		}
		g.branches = append(g.branches, dnf)
	}
	return g, len(g.branches) > 0
}
