package json

import (
	"fmt"
	"slices"
	"strings"
)

// Tuples: the schemas of an array's first items, one each, then one for
// the rest. Draft 2020-12 writes them prefixItems, with items for the
// rest; drafts up to 2019-09 write items as an array, with
// additionalItems for the rest. The two read a schema-valued "items"
// beside them differently (the rest, or every item), so a document may
// use one form only, and a $schema naming a draft takes that draft's.
const (
	tupleNone = iota
	tupleNew  // prefixItems (draft 2020-12)
	tupleOld  // items as an array, additionalItems (drafts up to 2019-09)
)

var tupleForms = [...]string{tupleNew: `"prefixItems" (draft 2020-12)`, tupleOld: `"items" as an array or "additionalItems" (drafts up to 2019-09)`}

// draftForm returns the tuple form of the draft a root $schema names,
// tupleNone for none or one it does not know.
func draftForm(v any) (int, string) {
	s, _ := v.(string)
	switch {
	case strings.Contains(s, "2020-12"):
		return tupleNew, "#/$schema"
	case strings.Contains(s, "2019-09"), strings.Contains(s, "draft-0"):
		return tupleOld, "#/$schema"
	}
	return tupleNone, ""
}

// tuple reads the array keywords of schema object s: the schemas of the
// first items (nil for none), the schema of the others (true when none
// is given) and the form they take. additionalItems without an array of
// items is ignored, as every draft ignores it there.
func tuple(s map[string]any, at string) (prefix []any, rest any, form int, err error) {
	p, hasPrefix := s["prefixItems"]
	items, hasItems := s["items"]
	add, hasAdd := s["additionalItems"]
	list, itemsList := items.([]any)
	rest = true
	switch {
	case hasPrefix && (itemsList || hasAdd):
		return nil, nil, 0, fmt.Errorf("schema %s: keyword \"prefixItems\" (draft 2020-12) beside \"items\" as an array or \"additionalItems\" (drafts up to 2019-09): the drafts read these differently, so the schema is refused", at)
	case hasPrefix:
		list, ok := p.([]any)
		if !ok || len(list) == 0 {
			return nil, nil, 0, fmt.Errorf("schema %s: prefixItems must be a non-empty array of schemas", at)
		}
		if hasItems {
			rest = items
		}
		return list, rest, tupleNew, nil
	case itemsList:
		if hasAdd {
			rest = add
		}
		return list, rest, tupleOld, nil
	}
	if hasItems {
		rest = items
	}
	return nil, rest, tupleNone, nil
}

// tupleForm checks that schema object s uses the tuple form the
// document uses.
func (c *compiler) tupleForm(s map[string]any, at string) error {
	_, _, form, err := tuple(s, at)
	switch {
	case err != nil || form == tupleNone:
		return err
	case c.form == tupleNone:
		c.form, c.formAt = form, at
	case c.form != form:
		return fmt.Errorf("schema %s: keyword %s where %s has %s: the drafts read \"items\" differently (draft 2020-12: the items after prefixItems; earlier drafts: every item, or the first ones when an array), so the schema is refused",
			at, tupleForms[form], c.formAt, tupleForms[c.form])
	}
	return nil
}

// items compiles items, prefixItems and additionalItems into n. A tuple
// whose rest is false, or one of whose first items can be nothing, takes
// no more items than come before it.
func (c *compiler) items(n *node, s map[string]any, at string) error {
	prefix, rest, form, err := tuple(s, at)
	if err != nil {
		return err
	}
	key, restKey := "items", "items"
	switch form {
	case tupleNew:
		key = "prefixItems"
	case tupleOld:
		restKey = "additionalItems"
	}
	if _, ok := s[restKey]; ok {
		if n.items, err = c.schema(rest, at+"/"+restKey); err != nil {
			return err
		}
	}
	for i, p := range prefix {
		idx, err := c.schema(p, fmt.Sprintf("%s/%s/%d", at, key, i))
		if err != nil {
			return err
		}
		n.prefix = append(n.prefix, idx)
	}
	for i, p := range n.prefix {
		if p == neverNode {
			n.maxItems = limitItems(n.maxItems, int32(i))
			n.prefix = n.prefix[:i]
			break
		}
	}
	if n.items == neverNode {
		n.maxItems = limitItems(n.maxItems, int32(len(n.prefix)))
	}
	return nil
}

// maxUnique bounds the distinct values of a uniqueItems array's items.
const maxUnique = 64

// uniqueItems compiles uniqueItems into n, its items compiled: enforced
// where every item takes one schema of finitely many values (an enum or
// const, boolean, null), whose distinct values (1 and 1.0 are one) get
// their own ids in a trie of their own, and where at most one item may
// come. Other arrays are refused, naming the keyword: telling strings or
// numbers apart would hold every item written in the parser's state.
func (c *compiler) uniqueItems(n *node, s map[string]any, at string) error {
	v, ok := s["uniqueItems"]
	if !ok {
		return nil
	}
	on, ok := v.(bool)
	if !ok {
		return fmt.Errorf("schema %s: uniqueItems must be a boolean", at)
	}
	if !on || n.maxItems >= 0 && n.maxItems <= 1 {
		return nil // no two items to compare
	}
	refuse := func(why string) error {
		return fmt.Errorf("schema %s: keyword \"uniqueItems\" is enforced only on arrays whose items all take one schema of finitely many values (enum, const, boolean, null; at most %d) or of at most one item, and %s, so the schema is refused", at, maxUnique, why)
	}
	if len(n.prefix) > 0 {
		return refuse("this one is a tuple")
	}
	it := c.g.nodes[n.items]
	var values []any
	switch {
	case it.pending || it.union != nil || it.branches != nil:
		return refuse("its items take more")
	case it.enum >= 0:
		values = it.values
	case it.types != 0 && it.types&^(tBoolean|tNull) == 0:
		if it.types&tBoolean != 0 {
			values = append(values, true, false)
		}
		if it.types&tNull != 0 {
			values = append(values, nil)
		}
	default:
		return refuse("its items take more")
	}
	it.enum = c.g.lits.newNode()
	var distinct []any
	for _, v := range values {
		id := slices.IndexFunc(distinct, func(w any) bool { return sameValue(v, w) })
		if id < 0 {
			if id = len(distinct); id == maxUnique {
				return refuse("its items take more")
			}
			distinct = append(distinct, v)
		}
		c.g.lits.add(it.enum, encode(v), int32(id), 1<<id)
	}
	it.values = values
	c.g.nodes = append(c.g.nodes, it)
	n.items, n.unique = int32(len(c.g.nodes)-1), true
	n.maxItems = limitItems(n.maxItems, int32(len(distinct))) // then every value is written
	return nil
}

// limitItems returns maxItems lowered to at most k.
func limitItems(maxItems, k int32) int32 {
	if maxItems < 0 {
		return k
	}
	return min(maxItems, k)
}

// itemAt returns the schema of item i (counted from 0).
func (n *node) itemAt(i uint32) int32 {
	if int(i) < len(n.prefix) {
		return n.prefix[i]
	}
	return n.items
}

// itemCount returns how far an array's items are counted: as far as a
// limit needs, and past the tuple's first items.
func (n *node) itemCount() int32 {
	return max(n.minItems, n.maxItems, int32(len(n.prefix)))
}

// mergeItems merges the array keywords of a and b into out, as allOf
// does: item i of the merged schema is valid for a's schema of item i and
// b's (a tuple's first items, or its rest), in the form the document
// uses. Without a tuple, items are merged as before.
func mergeItems(out, a, b map[string]any, at string) error {
	pa, ra, fa, err := tuple(a, at)
	if err != nil {
		return err
	}
	pb, rb, fb, err := tuple(b, at)
	if err != nil {
		return err
	}
	both := func(x, y any) any {
		switch {
		case x == true:
			return y
		case y == true:
			return x
		case x == false || y == false:
			return false
		}
		return map[string]any{"allOf": []any{x, y}}
	}
	delete(out, "items")
	delete(out, "prefixItems")
	delete(out, "additionalItems")
	form := max(fa, fb)
	if fa != tupleNone && fb != tupleNone && fa != fb {
		return fmt.Errorf("schema %s: allOf: %s beside %s", at, tupleForms[fa], tupleForms[fb])
	}
	_, hasA := a["items"]
	_, hasB := b["items"]
	if form == tupleNone {
		if hasA || hasB {
			out["items"] = both(ra, rb)
		}
		return nil
	}
	prefix := make([]any, max(len(pa), len(pb)))
	for i := range prefix {
		x, y := ra, rb
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		prefix[i] = both(x, y)
	}
	if form == tupleNew {
		out["prefixItems"], out["items"] = prefix, both(ra, rb)
	} else {
		out["items"], out["additionalItems"] = prefix, both(ra, rb)
	}
	return nil
}
