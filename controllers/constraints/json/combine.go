package json

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Classes of values, told apart by their first byte.
const (
	cObject = iota
	cArray
	cString
	cNumber
	cBoolean
	cNull
	nClasses
)

// classTypes are the types of each class.
var classTypes = [nClasses]uint8{tObject, tArray, tString, tNumber | tInteger, tBoolean, tNull}

var classNames = [nClasses]string{"object", "array", "string", "number", "boolean", "null"}

// classOf returns the class of a value that starts with b (cNull for a
// byte that starts none: the union then has no schema for it only if
// b is 'n').
func classOf(b byte) int {
	switch {
	case b == '{':
		return cObject
	case b == '[':
		return cArray
	case b == '"':
		return cString
	case b == '-' || b >= '0' && b <= '9':
		return cNumber
	case b == 't' || b == 'f':
		return cBoolean
	case b == 'n':
		return cNull
	}
	return cNull // a union's null schema refuses any other byte
}

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

// union compiles anyOf (one false) or oneOf (one true) of the compiled
// alternatives. Each class of value (object, array…) gets one schema:
// the only alternative that takes it, or one merged from several where
// that is exact (numbers, strings of lengths that join, enums, objects
// told apart by a discriminating property); otherwise the schema is
// refused, saying why. For oneOf, alternatives must be disjoint: only
// one may take a class, unless they are enums with distinct values or
// discriminated objects, judged by JSON Schema's types (an alternative
// without "type" takes every class), so that no instance is valid for
// two of them.
func (c *compiler) union(alts []int32, one bool, at string) (int32, error) {
	kw := "anyOf"
	if one {
		kw = "oneOf"
	}
	g := c.g
	for _, a := range alts {
		if g.nodes[a].pending {
			return 0, fmt.Errorf("schema %s: a branch leads back to this %s with no object or array in between", at, kw)
		}
	}
	// Alternatives that take no value: false, an enum with no valid
	// value. Such a one may still take values by JSON Schema's rules
	// (its loose types), which oneOf checks below.
	empty := func(a int32) bool {
		nd := &g.nodes[a]
		return nd.types == 0 && nd.union == nil && nd.branches == nil
	}
	live := slices.DeleteFunc(slices.Clone(alts), empty)
	if !one && slices.Contains(live, anyNode) {
		return anyNode, nil
	}
	if len(live) == 0 {
		return neverNode, nil
	}
	if len(live) == 1 && (!one || !slices.ContainsFunc(alts, func(a int32) bool { return a != live[0] && g.nodes[a].loose != 0 })) {
		return live[0], nil
	}
	var u [nClasses]int32
	for k := range nClasses {
		var parts []int32
		var from []int // the alternative of each part
		for i, a := range live {
			for _, p := range g.project(a, k) {
				parts = append(parts, p)
				from = append(from, i)
			}
		}
		u[k] = -1
		if len(parts) == 0 {
			continue
		}
		if one {
			for i, a := range alts {
				if g.nodes[a].loose&classTypes[k] != 0 && !slices.Contains(from, slices.Index(live, a)) {
					return 0, fmt.Errorf("schema %s: oneOf: branch %d may take %s values by JSON Schema's rules (its \"type\" does not exclude them, or its enum is of values of another type), so an instance could match it and another branch: give each branch its \"type\"", at, i, classNames[k])
				}
			}
		}
		var err error
		if u[k], err = c.mergeClass(k, parts, from, one, at); err != nil {
			return 0, err
		}
	}
	n := node{enum: -1, keys: -1, extra: -1, items: neverNode, maxItems: -1, maxLen: -1, union: &u}
	for k, p := range u {
		if p >= 0 {
			n.types |= classTypes[k] & g.nodes[p].types
			if g.nodes[p].enum >= 0 {
				n.types |= classTypes[k]
			}
		}
	}
	for _, a := range live {
		n.loose |= g.nodes[a].loose
	}
	g.nodes = append(g.nodes, n)
	return int32(len(g.nodes) - 1), nil
}

// project returns the parts of schema a that take values of class k: a
// copy of it restricted to the class, its enum values of that class, a
// discriminated union's branches.
func (g *grammar) project(a int32, k int) []int32 {
	nd := g.nodes[a]
	if nd.union != nil {
		if p := nd.union[k]; p >= 0 {
			return g.project(p, k)
		}
		return nil
	}
	if nd.branches != nil {
		return slices.Clone(nd.branches)
	}
	if nd.enum >= 0 {
		var vals []any
		for _, v := range nd.values {
			if classOf(encode(v)[0]) == k {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			return nil
		}
		if len(vals) == len(nd.values) {
			return []int32{a}
		}
		nd.enum, nd.values = g.lits.newNode(), vals
		for _, v := range vals {
			g.lits.add(nd.enum, encode(v), 0, 0)
		}
		g.nodes = append(g.nodes, nd)
		return []int32{int32(len(g.nodes) - 1)}
	}
	if nd.types&classTypes[k] == 0 {
		return nil
	}
	if nd.types&^classTypes[k] == 0 {
		return []int32{a}
	}
	nd.types &= classTypes[k]
	g.nodes = append(g.nodes, nd)
	return []int32{int32(len(g.nodes) - 1)}
}

// mergeClass returns one schema for the parts of a union that take
// values of class k.
func (c *compiler) mergeClass(k int, parts []int32, from []int, one bool, at string) (int32, error) {
	g := c.g
	kw := "anyOf"
	if one {
		kw = "oneOf"
	}
	var lits, gens []int32
	var genFrom []int
	for i, p := range parts {
		if g.nodes[p].enum >= 0 {
			lits = append(lits, p)
		} else if !slices.Contains(gens, p) || one {
			gens = append(gens, p)
			genFrom = append(genFrom, from[i])
		}
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	// The values of the enums, those in two alternatives left out of a
	// oneOf (an instance equal to one would match both).
	var values []any
	var valFrom []int
	for i, p := range parts {
		if g.nodes[p].enum < 0 {
			continue
		}
		for _, v := range g.nodes[p].values {
			values = append(values, v)
			valFrom = append(valFrom, from[i])
		}
	}
	if one {
		var keep []any
		for i, v := range values {
			shared := false
			for j, w := range values {
				if valFrom[i] != valFrom[j] && sameValue(v, w) {
					shared = true
				}
			}
			if !shared {
				keep = append(keep, v)
			}
		}
		values = keep
	}
	gen := int32(-1)
	if len(gens) > 0 {
		var err error
		if gen, err = c.mergeGeneral(k, gens, genFrom, one, at); err != nil {
			return 0, err
		}
	}
	var left []any
	for _, v := range values {
		if gen < 0 || !g.acceptsFrom(gen, encode(v)) {
			left = append(left, v)
		} else if one {
			return 0, fmt.Errorf("schema %s: oneOf: the value %s of one branch is valid for another, so an instance could match both", at, encode(v))
		}
	}
	switch {
	case len(left) == 0 && gen >= 0:
		return gen, nil
	case gen >= 0:
		return 0, fmt.Errorf("schema %s: %s: the %s values %s of one branch cannot be combined with another branch's %s schema", at, kw, classNames[k], encode(left), classNames[k])
	case len(left) == 0:
		return neverNode, nil
	}
	n := g.nodes[lits[0]]
	n.enum, n.values, n.types = g.lits.newNode(), nil, 0
	for _, v := range left {
		lit := encode(v)
		if !slices.ContainsFunc(n.values, func(w any) bool { return string(encode(w)) == string(lit) }) {
			g.lits.add(n.enum, lit, 0, 0)
			n.values = append(n.values, v)
		}
	}
	for _, p := range lits {
		n.types |= g.nodes[p].types
		n.loose |= g.nodes[p].loose
	}
	g.nodes = append(g.nodes, n)
	return int32(len(g.nodes) - 1), nil
}

// mergeGeneral returns one schema for the non-enum parts of a union
// that take values of class k.
func (c *compiler) mergeGeneral(k int, gens []int32, from []int, one bool, at string) (int32, error) {
	g := c.g
	if len(gens) == 1 {
		return gens[0], nil
	}
	if k == cObject {
		return c.discriminate(gens, from, one, at)
	}
	if one {
		return 0, fmt.Errorf("schema %s: oneOf: branches %v all take %s values, and the controller cannot tell them apart (it can for different types, enums of distinct values, and objects with a property of distinct const values)", at, from, classNames[k])
	}
	n := g.nodes[gens[0]]
	for _, p := range gens {
		if pn := &g.nodes[p]; pn.pat != nil && k == cString {
			return 0, fmt.Errorf("schema %s: anyOf: string branches with a pattern or format cannot be combined with other string branches", at)
		}
		if pn := &g.nodes[p]; pn.num != nil && k == cNumber {
			return 0, fmt.Errorf("schema %s: anyOf: number branches with bounds or multipleOf cannot be combined with other number branches", at)
		}
	}
	switch k {
	case cBoolean, cNull:
		return gens[0], nil
	case cNumber:
		for _, p := range gens {
			n.types |= g.nodes[p].types
		}
	case cString, cArray:
		type span struct{ lo, hi int64 }
		var spans []span
		same := true
		for _, p := range gens {
			pn := &g.nodes[p]
			lo, hi := int64(pn.minLen), int64(pn.maxLen)
			if k == cArray {
				lo, hi = int64(pn.minItems), int64(pn.maxItems)
				if pn.items != n.items || !slices.Equal(pn.prefix, n.prefix) {
					same = false
				}
			}
			if hi < 0 {
				hi = 1 << 40
			}
			spans = append(spans, span{lo, hi})
		}
		slices.SortFunc(spans, func(x, y span) int { return int(x.lo - y.lo) })
		cur := spans[0]
		for _, sp := range spans[1:] {
			if sp.lo > cur.hi+1 {
				return 0, fmt.Errorf("schema %s: anyOf: %s branches whose lengths leave a gap (%d to %d, then from %d) cannot be combined", at, classNames[k], cur.lo, cur.hi, sp.lo)
			}
			cur.hi = max(cur.hi, sp.hi)
		}
		if cur.hi >= 1<<40 {
			cur.hi = -1
		}
		if k == cString {
			n.minLen, n.maxLen = int32(cur.lo), int32(cur.hi)
		} else if !same {
			// Items of different schemas: only one branch that takes any
			// items, in every number, covers the others.
			for _, p := range gens {
				if pn := &g.nodes[p]; pn.items == anyNode && pn.prefix == nil && int64(pn.minItems) <= cur.lo && (pn.maxItems < 0 || int64(pn.maxItems) >= cur.hi && cur.hi >= 0) {
					return p, nil
				}
			}
			return 0, fmt.Errorf("schema %s: anyOf: array branches with different items cannot be combined", at)
		} else {
			n.minItems, n.maxItems = int32(cur.lo), int32(cur.hi)
		}
	}
	g.nodes = append(g.nodes, n)
	return int32(len(g.nodes) - 1), nil
}

// discriminate combines object schemas told apart by a property that
// each declares with an enum or const: the object then starts with that
// property, whose value chooses the branch. For oneOf, the values of
// different branches must differ (a value in two would let an instance
// match both); the other branches refuse the chosen one's value, so no
// instance matches two. For anyOf, a value in two branches chooses the
// first. An anyOf with an object schema that takes every object is that
// schema.
func (c *compiler) discriminate(gens []int32, from []int, one bool, at string) (int32, error) {
	g := c.g
	kw := "anyOf"
	if one {
		kw = "oneOf"
	}
	if !one {
		for _, p := range gens {
			if pn := &g.nodes[p]; pn.keys < 0 && pn.extra == anyNode && pn.obj == nil && pn.kp == nil && pn.types&tObject != 0 {
				return p, nil
			}
		}
	}
	prop := func(p int32, name string) *node {
		pn := &g.nodes[p]
		if i := slices.Index(pn.names, name); i >= 0 {
			return &g.nodes[pn.props[i]]
		}
		return nil
	}
	var best string
	bestDisjoint := false
	for _, name := range g.nodes[gens[0]].names {
		ok, disjoint := true, true
		for i, p := range gens {
			d := prop(p, name)
			if d == nil || d.rawEnum == nil {
				ok = false
				break
			}
			for _, q := range gens[:i] {
				for _, v := range d.rawEnum {
					if slices.ContainsFunc(prop(q, name).rawEnum, func(w any) bool { return sameValue(v, w) }) {
						disjoint = false
					}
				}
			}
		}
		if ok && (best == "" || disjoint && !bestDisjoint) {
			best, bestDisjoint = name, disjoint
		}
	}
	if best == "" || one && !bestDisjoint {
		return 0, fmt.Errorf("schema %s: %s: object branches %v must be told apart by a property that each declares with const or enum values (distinct ones, for oneOf), and none is", at, kw, from)
	}
	n := node{types: tObject, enum: -1, keys: g.lits.newNode(), extra: -1, items: neverNode, maxItems: -1, maxLen: -1,
		all: 1, required: 1, names: []string{best}, loose: tObject}
	g.lits.add(n.keys, keyLit(best), 0, 1)
	disc := node{enum: g.lits.newNode(), keys: -1, extra: -1, items: neverNode, maxItems: -1, maxLen: -1, loose: tAny}
	for i, p := range gens {
		d := prop(p, best)
		for _, v := range d.values {
			lit := encode(v)
			if c.g.lits.has(disc.enum, lit) {
				continue // anyOf: the first branch with the value
			}
			c.g.lits.add(disc.enum, lit, int32(i), 0)
			disc.values = append(disc.values, v)
			disc.types |= d.types
		}
		pn := &g.nodes[p]
		n.branches = append(n.branches, p)
		n.discBit = append(n.discBit, int32(slices.Index(pn.names, best)))
	}
	if len(disc.values) == 0 {
		return neverNode, nil
	}
	g.nodes = append(g.nodes, disc)
	n.props = []int32{int32(len(g.nodes) - 1)}
	g.nodes = append(g.nodes, n)
	return int32(len(g.nodes) - 1), nil
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
