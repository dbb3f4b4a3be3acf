package json

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Value types, as a bit set.
const (
	tObject = 1 << iota
	tArray
	tString
	tNumber // any number, integers included
	tInteger
	tBoolean
	tNull
	tAny = tObject | tArray | tString | tNumber | tInteger | tBoolean | tNull
)

var typeNames = map[string]uint8{
	"object": tObject, "array": tArray, "string": tString, "number": tNumber,
	"integer": tInteger, "boolean": tBoolean, "null": tNull,
}

// node is a compiled schema.
type node struct {
	types    uint8
	enum     int32   // literal trie of the allowed values (compact JSON), or -1
	keys     int32   // literal trie of the declared property names, quotes included, or -1
	props    []int32 // schema of each declared property, by bit index
	all      uint64  // bits of the declared properties
	required uint64  // bits of the required ones
	extra    int32   // schema of undeclared properties, or -1 when they are refused
	items    int32   // schema of array items (after prefix)
	// prefix holds the schemas of the first items (prefixItems, or
	// draft-07's array of items), nil for none.
	prefix   []int32
	minItems int32
	maxItems int32 // -1: no limit
	// unique marks an array of uniqueItems: its items' enum trie ends
	// each distinct value with its own id, and the frame's seen holds
	// the ids written.
	unique bool
	minLen int32 // string length in code points
	maxLen int32 // -1: no limit
	// pat matches the decoded strings that pattern and format allow, nil
	// for any.
	pat *strPattern
	// num reads numbers within bounds, nil for any.
	num *numAuto

	// pending marks the placeholder of a $ref being compiled.
	pending bool
	// loose holds the types the schema admits by JSON Schema's rules (no
	// "type" admits all, whatever the controller infers): what oneOf's
	// disjointness is judged on.
	loose uint8
	// names are the declared properties, by bit index; rawEnum the enum
	// or const values as written (nil: none), values those kept.
	names   []string
	rawEnum []any
	values  []any

	// A union (anyOf, oneOf) has the schema of each class of value, by
	// first byte (cObject…), -1 for none.
	union *[nClasses]int32
	// An object union told apart by a discriminating property, which
	// comes first (its only key, props[0]); its value's trie leads to
	// the branch (an index in branches), the frame then moves to it with
	// the property's bit (discBit) seen.
	branches []int32
	discBit  []int32
	// obj holds minProperties, maxProperties and dependentRequired, nil
	// for none.
	obj *objRules
	// wide holds the property sets of an object of more than 64
	// properties (all, required and blocked are unused then).
	wide *wideProps
	// kp holds patternProperties compiled, nil for none.
	kp *keyPats

	// Nesting needed to complete a value (containers opened, counting
	// its own): any value, an object, an array; maxDepth+1 when more
	// than allowed.
	minDepth, objDepth, arrDepth int32
	// blocked[room] holds the properties whose values need more than
	// room levels of nesting.
	blocked [maxDepth + 1]uint64
}

// anyNode is the schema that accepts every JSON value, neverNode the
// one that accepts none (false, or an enum none of whose values is valid
// for the rest of its schema: a property of that schema cannot come).
const (
	anyNode   = 0
	neverNode = 1
)

// maxProps bounds the properties of one object schema.
const maxProps = 4096

// compiler turns a JSON schema into nodes.
type compiler struct {
	g    *grammar
	root any
	refs map[string]int32
	// inline counts the combinations (allOf, anyOf, oneOf) compiled
	// within each other since the last container, to stop a recursion
	// through $ref that never reaches a value.
	inline int
	// nesting counts the schemas being compiled within each other.
	nesting int
	// combos holds the node of each combination compiled, by the
	// address of its schema object (kept, so that no other takes it).
	combos       map[uintptr]int32
	combosByText map[string]int32
	kept         []map[string]any
	// form is the tuple form the document uses (tupleNew, tupleOld),
	// first seen at formAt: the drafts read "items" differently, so one
	// document may not mix them.
	form   int
	formAt string
}

// compileSchema parses arg, a JSON schema, into g's nodes and returns
// the root's index.
func (g *grammar) compileSchema(arg string) (int32, error) {
	dec := stdjson.NewDecoder(strings.NewReader(arg))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return 0, fmt.Errorf("schema: %w", err)
	}
	if dec.More() {
		return 0, errors.New("schema: text after the schema")
	}
	c := &compiler{g: g, root: raw, refs: map[string]int32{}, combos: map[uintptr]int32{}, combosByText: map[string]int32{}}
	if m, ok := raw.(map[string]any); ok {
		c.form, c.formAt = draftForm(m["$schema"])
	}
	root, err := c.schema(raw, "#")
	if err != nil {
		return 0, err
	}
	g.depths()
	if g.nodes[root].minDepth > maxDepth {
		return 0, fmt.Errorf("schema: no value is valid for it (or none nests less than %d levels deep)", maxDepth+1)
	}
	return root, nil
}

// Bounds on compiling: schemas nested deeper than maxNesting as
// compiled, or more than maxNodes nodes, are refused. A recursion
// through a $ref inside an allOf is expanded each time it is met (the
// merged schema is new), and would go on without end.
const (
	maxNesting = 256
	maxNodes   = 1 << 18
)

func (c *compiler) schema(raw any, at string) (int32, error) {
	if c.nesting++; c.nesting > maxNesting || len(c.g.nodes) > maxNodes {
		return 0, fmt.Errorf("schema %s: nested more than %d levels deep, or more than %d schemas, as the json controller compiles it (a $ref inside an allOf, anyOf or oneOf that leads back to it is expanded again each time)", at, maxNesting, maxNodes)
	}
	defer func() { c.nesting-- }()
	switch v := raw.(type) {
	case bool:
		if v {
			return anyNode, nil
		}
		return neverNode, nil
	case map[string]any:
		return c.object(v, at)
	}
	return 0, fmt.Errorf("schema %s: want an object or a boolean", at)
}

func (c *compiler) object(s map[string]any, at string) (int32, error) {
	if err := checkKeywords(s, at); err != nil {
		return 0, err
	}
	if combined(s) {
		return c.combineOnce(s, at)
	}
	if ref, ok := s["$ref"]; ok {
		return c.ref(ref, at)
	}
	n, err := c.fill(s, at)
	if err != nil {
		return 0, err
	}
	c.g.nodes = append(c.g.nodes, n)
	idx := int32(len(c.g.nodes) - 1)
	return idx, c.enum(idx, s, at)
}

// fill compiles the keywords of one schema object.
func (c *compiler) fill(s map[string]any, at string) (node, error) {
	n := node{enum: -1, keys: -1, extra: anyNode, items: anyNode, maxItems: -1, maxLen: -1, loose: tAny}
	if err := checkKeywords(s, at); err != nil {
		return n, err
	}
	if err := c.tupleForm(s, at); err != nil {
		return n, err
	}
	var err error
	if n.types, err = types(s, at); err != nil {
		return n, err
	}
	if _, ok := s["type"]; ok {
		n.loose = n.types
		if n.loose&tNumber != 0 {
			n.loose |= tInteger
		}
	}
	if ns, ok := s["not"]; ok {
		ex, err := notTypes(ns, at)
		if dnf, objectOnly, ok := presence(ns); err != nil && ok {
			// not of required properties: conflicts (objectRules); a
			// value that is not an object is valid for the presence
			// test, so not refuses it, unless the test says "object".
			err = nil
			if !objectOnly {
				n.types &= tObject
				n.loose &= tObject
			}
			if slices.ContainsFunc(dnf, func(t []string) bool { return len(t) == 0 }) {
				n.types &^= tObject // every object passes the test
			}
		}
		if err != nil {
			return n, err
		}
		if ex&tInteger != 0 && ex&tNumber == 0 && n.types&tNumber != 0 {
			// A number that is not an integer needs a fraction that is
			// not zero (5.0 is an integer): not written that way.
			return n, fmt.Errorf("schema %s: keyword \"not\" of integer beside numbers is not enforced by the json controller, so the schema is refused", at)
		}
		n.types &^= ex
		n.loose &^= ex
	}
	if groups, _ := s[presenceKey].([]presenceGroup); slices.ContainsFunc(groups, func(g presenceGroup) bool { return g.one && len(g.branches) > 1 }) {
		// Every branch passes a value that is not an object: a oneOf of
		// two or more refuses it.
		n.types &= tObject
		n.loose &= tObject
	}
	inline := c.inline
	c.inline = 0 // a container's values start a new count
	defer func() { c.inline = inline }()
	ints := []struct {
		key string
		dst *int32
		max bool
	}{{"minItems", &n.minItems, false}, {"maxItems", &n.maxItems, true}, {"minLength", &n.minLen, false}, {"maxLength", &n.maxLen, true}}
	for _, f := range ints {
		if v, ok := s[f.key]; ok {
			i, ok := count(v)
			if !ok {
				return n, fmt.Errorf("schema %s: %s must be a non-negative integer", at, f.key)
			}
			if i > math.MaxInt32 {
				if !f.max {
					return n, fmt.Errorf("schema %s: %s above %d is not supported", at, f.key, math.MaxInt32)
				}
				i = math.MaxInt32 // a lower maximum: stricter, and out of any reply's reach
			}
			*f.dst = int32(i)
		}
	}
	if n.pat, err = stringPattern(s, at); err != nil {
		return n, err
	}
	if f, _ := s["format"].(string); n.types&(tNumber|tInteger) != 0 && numFormats[f] != [2]string{} {
		// OpenAPI's int32 and int64: integers in their range.
		r := numFormats[f]
		n.types = n.types&^tNumber | tInteger
		if s, err = mergeSchemas(s, map[string]any{"minimum": stdjson.Number(r[0]), "maximum": stdjson.Number(r[1])}, at); err != nil {
			return n, err
		}
	}
	if n.types&(tNumber|tInteger) != 0 {
		sp, err := numBounds(s, n.types&tNumber == 0, at)
		if err != nil {
			return n, err
		}
		if sp != nil {
			if n.num, err = sp.build(); err != nil {
				return n, fmt.Errorf("schema %s: %v", at, err)
			}
			if n.num == nil { // no number is in range
				n.types &^= tNumber | tInteger
			}
		}
	}
	if f, _ := s["format"].(string); f == "email" && (n.maxLen < 0 || n.maxLen > 254) {
		n.maxLen = 254 // RFC 5321's limit, which the pattern keeps anyway
	} else if f == "hostname" && (n.maxLen < 0 || n.maxLen > 253) {
		n.maxLen = 253 // RFC 1123's
	}
	if p := n.pat; p != nil && !p.canFinish(p.states[p.start], 0, n.minLen, n.maxLen) || n.maxLen >= 0 && n.minLen > n.maxLen {
		n.types &^= tString // no string matches within the length limits
	}
	if err := c.items(&n, s, at); err != nil {
		return n, err
	}
	if err := c.uniqueItems(&n, s, at); err != nil {
		return n, err
	}
	if n.maxItems >= 0 && n.minItems > n.maxItems {
		n.types &^= tArray // no array has that many items
	}
	return n, c.properties(&n, s, at)
}

// isRequired reports whether property bit of n is required.
func (n *node) isRequired(bit int) bool {
	if n.wide != nil {
		return hasBit(n.wide.required, bit)
	}
	return n.required&(1<<bit) != 0
}

// count reads a non-negative integer, as 5 or 5.0, saturated at 2^53.
func count(v any) (int64, bool) {
	num, _ := v.(stdjson.Number)
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f < 0 || f != math.Trunc(f) {
		return 0, false
	}
	return int64(min(f, 1<<53)), true
}

// types reads "type", or infers it from the other keywords.
func types(s map[string]any, at string) (uint8, error) {
	var names []any
	switch t := s["type"].(type) {
	case nil:
		var ty uint8
		for key, bit := range map[string]uint8{"properties": tObject, "required": tObject, "additionalProperties": tObject,
			"items": tArray, "prefixItems": tArray, "additionalItems": tArray, "minItems": tArray, "maxItems": tArray, "minLength": tString, "maxLength": tString,
			"pattern": tString, "format": tString, "minimum": tNumber, "maximum": tNumber, "exclusiveMinimum": tNumber,
			"exclusiveMaximum": tNumber, "multipleOf": tNumber, "minProperties": tObject, "maxProperties": tObject,
			"dependentRequired": tObject, "dependencies": tObject, "patternProperties": tObject, "propertyNames": tObject} {
			if _, ok := s[key]; ok {
				ty |= bit
			}
		}
		if ty == 0 {
			ty = tAny
		}
		return ty, nil
	case string:
		names = []any{t}
	case []any:
		names = t
	}
	var ty uint8
	for _, name := range names {
		s, _ := name.(string)
		bit, ok := typeNames[s]
		if !ok {
			return 0, fmt.Errorf("schema %s: unknown type %v", at, name)
		}
		ty |= bit
	}
	if ty == 0 {
		return 0, fmt.Errorf("schema %s: bad type %v", at, s["type"])
	}
	return ty, nil
}

// enum compiles enum or const into node idx, compiled from the other
// keywords already: the value must be one of them, written as compact
// JSON, and valid for the rest of the schema (a value the rest refuses is
// left out, as one of another type). With none left, the node accepts
// nothing: a property of that schema cannot come, and an object that
// requires it cannot be.
func (c *compiler) enum(idx int32, s map[string]any, at string) error {
	values, ok := s["enum"].([]any)
	if _, isEnum := s["enum"]; isEnum && !ok {
		return fmt.Errorf("schema %s: enum must be an array", at)
	}
	if v, ok := s["const"]; ok {
		if values != nil && !slices.ContainsFunc(values, func(e any) bool { return sameValue(e, v) }) {
			values = []any{}
		} else {
			values = []any{v}
		}
	}
	if values == nil {
		return nil
	}
	trie := c.g.lits.newNode()
	var kept []any
	var loose uint8
	for _, v := range values {
		loose |= typeOf(v)
		if lit := encode(v); c.g.acceptsFrom(idx, lit) {
			c.g.lits.add(trie, lit, 0, 0)
			kept = append(kept, v)
		}
	}
	if loose&tNumber != 0 {
		loose |= tInteger // 1.0 is an integer too
	}
	nd := &c.g.nodes[idx]
	loose &= nd.loose
	if len(kept) == 0 {
		*nd = c.g.nodes[neverNode]
	} else {
		nd.enum, nd.values = trie, kept
	}
	nd.rawEnum, nd.loose = values, loose
	if nd.rawEnum == nil {
		nd.rawEnum = []any{}
	}
	return nil
}
