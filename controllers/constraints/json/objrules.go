package json

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// objRules are an object schema's minProperties, maxProperties and
// dependentRequired (draft-07's dependencies with arrays), for objects
// of up to 64 declared properties.
//
// The frame counts for them: in count, the keys written (only under
// maxProperties, saturated past it) and, in countExtra, whether an
// undeclared key was. Distinct properties are at least the declared ones
// seen plus one for any undeclared ones (two undeclared keys may be the
// same name; the controller cannot tell them apart), and at most the keys
// written: minProperties is checked on the first, maxProperties on the
// second, so each holds for what a validator counts.
type objRules struct {
	minProps, maxProps int32 // maxProps -1: none
	// deps[bit]: the properties required once property bit is present,
	// closed over (a required property requires its own); nil: none.
	deps []uint64
	// conflicts are sets of properties that may not all be present (a
	// not of required ones, two branches of a oneOf of them).
	conflicts []uint64
	// anyOf holds the sets of properties one of which must be present
	// at the end (an anyOf or oneOf of required ones); nil: none.
	anyOf []uint64
}

// countExtra marks, in an object frame's count, that an undeclared key
// was written.
const countExtra = 1 << 31

// objectRules compiles minProperties, maxProperties and the
// dependencies of n (its properties compiled), with names the bit of
// each name.
func (c *compiler) objectRules(n *node, s map[string]any, deps map[string][]string, conflicts, anyOf [][]string, at string) error {
	o := &objRules{maxProps: -1}
	for _, k := range []string{"minProperties", "maxProperties"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		i, ok := count(v)
		if !ok {
			return fmt.Errorf("schema %s: %s must be a non-negative integer", at, k)
		}
		i = min(i, 1<<20)
		if k == "minProperties" {
			o.minProps = int32(i)
		} else {
			o.maxProps = int32(i)
		}
	}
	if len(deps) > 0 {
		o.deps = make([]uint64, len(n.names))
		for name, list := range deps {
			bit := slices.Index(n.names, name)
			for _, r := range list {
				o.deps[bit] |= 1 << slices.Index(n.names, r)
			}
		}
		for changed := true; changed; { // closed over
			changed = false
			for bit, d := range o.deps {
				all := d
				for r := range bitsOf(d) {
					all |= o.deps[r]
				}
				if all != d {
					o.deps[bit], changed = all, true
				}
			}
		}
	}
	for _, t := range conflicts {
		var m uint64
		for _, name := range t {
			m |= 1 << slices.Index(n.names, name)
		}
		o.conflicts = append(o.conflicts, m)
	}
	for _, t := range anyOf {
		var m uint64
		for _, name := range t {
			m |= 1 << slices.Index(n.names, name)
		}
		o.anyOf = append(o.anyOf, m)
	}
	if o.minProps == 0 && o.maxProps < 0 && o.deps == nil && o.conflicts == nil && o.anyOf == nil {
		return nil
	}
	if n.wide != nil {
		return fmt.Errorf("schema %s: minProperties, maxProperties, dependentRequired and not of required properties are enforced on objects of up to 64 declared properties only", at)
	}
	if (o.conflicts != nil || o.anyOf != nil) && o.minProps > 0 {
		// Properties that conflict could be counted on to reach
		// minProperties and then not come: a dead end.
		return fmt.Errorf("schema %s: minProperties beside not of required properties is not enforced (the controller could not promise that a reply can always be finished)", at)
	}
	if o.clashes(o.needed(n, n.required)) || o.anyOf != nil && !o.reachable(n, n.required, ^uint64(0), -1) {
		n.types &^= tObject // the required properties conflict, or no set of the anyOf can come
	}
	if o.maxProps >= 0 && o.deps != nil {
		// A property written early can leave no room under maxProperties
		// for a required one and what it depends on (TestRandomSchemas
		// found such a dead end, which ends a reply unfinished).
		return fmt.Errorf("schema %s: maxProperties and dependentRequired together are not enforced (the controller could not promise that a reply can always be finished)", at)
	}
	extra := int32(0)
	if n.extra >= 0 || n.kp != nil {
		extra = 1
	}
	if o.minProps > int32(len(n.names))+extra {
		return fmt.Errorf("schema %s: minProperties %d needs more than one undeclared property, and the controller cannot tell undeclared names apart to count them; declare the properties", at, o.minProps)
	}
	if o.maxProps >= 0 && (int32(bits.OnesCount64(o.needed(n, n.required))) > o.maxProps || o.minProps > o.maxProps) {
		n.types &^= tObject // no object is valid
	}
	n.obj = o
	return nil
}

// bitsOf yields the indices of the bits set in m.
func bitsOf(m uint64) func(func(int) bool) {
	return func(yield func(int) bool) {
		for m != 0 {
			i := bits.TrailingZeros64(m)
			if !yield(i) {
				return
			}
			m &^= 1 << i
		}
	}
}

// depth returns the nesting an object of schema n needs (counting its
// own level), given what each property needs: its required properties
// and those they depend on, and as many as minProperties wants.
func (o *objRules) depth(g *grammar, n *node, base int32) int32 {
	const inf = maxDepth + 1
	d := base
	for bit := range bitsOf(o.needed(n, n.required)) {
		d = max(d, 1+g.nodes[n.props[bit]].minDepth)
	}
	if o.anyOf != nil {
		// The set of the anyOf that needs the least.
		best := int32(inf)
		for _, m := range o.anyOf {
			all := n.required | m | o.needed(n, n.required|m)
			if o.clashes(all) {
				continue
			}
			ds := int32(1)
			for bit := range bitsOf(all) {
				ds = max(ds, 1+g.nodes[n.props[bit]].minDepth)
			}
			best = min(best, ds)
		}
		d = max(d, best)
	}
	if o.minProps > 0 {
		var ds []int32
		for bit := range n.props {
			ds = append(ds, o.propDepth(g, n, bit))
		}
		if n.extra >= 0 || n.kp != nil {
			ds = append(ds, g.undeclDepth(n))
		}
		slices.Sort(ds)
		if int(o.minProps) > len(ds) {
			return inf
		}
		d = max(d, 1+ds[o.minProps-1])
	}
	return min(d, inf)
}

// propDepth returns the nesting property bit's value needs, and that of
// the properties it makes required.
func (o *objRules) propDepth(g *grammar, n *node, bit int) int32 {
	d := g.nodes[n.props[bit]].minDepth
	if o.deps != nil {
		for r := range bitsOf(o.deps[bit]) {
			d = max(d, g.nodes[n.props[r]].minDepth)
		}
	}
	return d
}

// needed returns the properties an object of schema nd must have, given
// those present: the required ones and those they depend on.
func (o *objRules) needed(nd *node, seen uint64) uint64 {
	need := nd.required
	if o.deps != nil {
		for bit := range bitsOf(seen) {
			need |= o.deps[bit]
		}
	}
	return need
}

// clashes reports whether the properties present holds every property of
// a conflict.
func (o *objRules) clashes(present uint64) bool {
	for _, m := range o.conflicts {
		if present&m == m {
			return true
		}
	}
	return false
}

// reachable reports whether, with the properties present, one set of
// the anyOf can still be completed: it and what it then needs complete
// no conflict, its missing properties may come (can), and they fit in
// left more keys (left < 0: no limit).
func (o *objRules) reachable(nd *node, present, can uint64, left int32) bool {
	for _, m := range o.anyOf {
		all := present | m | o.needed(nd, present|m)
		missing := all &^ present
		if !o.clashes(all) && missing&^can == 0 && (left < 0 || int32(bits.OnesCount64(missing)) <= left) {
			return true
		}
	}
	return false
}

// closes reports whether the object on top of s may end.
func (g *grammar) closes(nd *node, f *frame) bool {
	if !g.reqDone(nd, f.seen) {
		return false
	}
	o := nd.obj
	if o == nil {
		return true
	}
	if o.needed(nd, f.seen)&^f.seen != 0 {
		return false
	}
	if o.anyOf != nil && !slices.ContainsFunc(o.anyOf, func(m uint64) bool { return f.seen&m == m }) {
		return false
	}
	distinct := int32(bits.OnesCount64(f.seen))
	if f.count&countExtra != 0 {
		distinct++
	}
	return distinct >= o.minProps
}

// fits reports whether one more key may come in the object frame f of
// schema nd, o its rules, room levels of nesting left: a declared one
// (bit), or an undeclared one (bit -1). A key may come only where the
// object can still be closed after it (a dead end would stop the reply
// unfinished): within maxProperties, room left for the properties then
// needed, and for as many more as minProperties still wants, among those
// that can still come.
func (o *objRules) fits(g *grammar, nd *node, f *frame, bit int, room int32) bool {
	left := int32(math.MaxInt32) // keys that may come after this one
	if o.maxProps >= 0 {
		if left = o.maxProps - int32(f.count&^countExtra) - 1; left < 0 {
			return false
		}
	}
	seen, extraUsed := f.seen, f.count&countExtra != 0
	if bit >= 0 {
		seen |= 1 << bit
	} else {
		extraUsed = true
	}
	if o.clashes(seen | o.needed(nd, seen)) {
		return false // it, or a property it then needs, completes a conflict
	}
	if o.anyOf != nil && !o.reachable(nd, seen, ^nd.blocked[room], left) {
		return false // no set of the anyOf could be completed after it
	}
	if o.deps != nil || o.maxProps >= 0 {
		if int32(bits.OnesCount64(o.needed(nd, seen)&^seen)) > left {
			return false
		}
	}
	distinct := int32(bits.OnesCount64(seen))
	if extraUsed {
		distinct++
	}
	if short := o.minProps - distinct; short > 0 {
		can := int32(bits.OnesCount64(nd.all &^ seen &^ nd.blocked[room]))
		if !extraUsed && g.undeclDepth(nd) <= room {
			can++
		}
		if short > min(left, can) {
			return false
		}
	}
	return true
}

// availRules keeps, of avail, the declared properties that fit.
func (o *objRules) availRules(g *grammar, nd *node, f *frame, avail uint64, room int32) uint64 {
	if o.maxProps < 0 && o.minProps == 0 && o.conflicts == nil && o.anyOf == nil {
		return avail // dependencies: blocked already holds a property whose needs cannot come
	}
	for bit := range bitsOf(avail) {
		if !o.fits(g, nd, f, bit, room) {
			avail &^= 1 << bit
		}
	}
	return avail
}

// counted updates an object frame's count after a property's value;
// extra: the property was undeclared.
func (o *objRules) counted(f *frame, extra bool) {
	if o.maxProps >= 0 && int32(f.count&^countExtra) <= o.maxProps {
		f.count++
	}
	if extra {
		f.count |= countExtra
	}
}
