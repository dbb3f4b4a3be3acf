package json

import (
	"fmt"
	"slices"
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
