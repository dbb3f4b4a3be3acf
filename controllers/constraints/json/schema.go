package json

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
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
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case slices.Contains(enforced, k), slices.Contains(annotations, k):
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

// depths computes the nesting that each schema needs (a fixpoint, since
// schemas can be recursive) and the properties blocked by it.
func (g *grammar) depths() {
	const inf = maxDepth + 1
	for i := range g.nodes {
		n := &g.nodes[i]
		n.minDepth, n.objDepth, n.arrDepth = inf, inf, inf
		n.blocked = [maxDepth + 1]uint64{}
	}
	for changed := true; changed; {
		changed = false
		for i := range g.nodes {
			if g.nodes[i].kp != nil {
				g.keyDepths(&g.nodes[i])
			}
		}
		for i := range g.nodes {
			n := &g.nodes[i]
			if n.union != nil || n.branches != nil {
				d := int32(inf)
				if n.union != nil {
					for _, k := range n.union {
						if k >= 0 {
							d = min(d, g.nodes[k].minDepth)
						}
					}
				} else {
					d = 0 // as deep as the deepest branch: any may be chosen once the object is open
					for _, b := range n.branches {
						d = max(d, g.nodes[b].objDepth)
					}
				}
				if d != n.minDepth {
					n.minDepth, n.objDepth, n.arrDepth, changed = d, d, inf, true
				}
				continue
			}
			obj := int32(1)
			for bit, p := range n.props {
				if n.isRequired(bit) {
					obj = max(obj, 1+g.nodes[p].minDepth)
				}
			}
			if n.obj != nil {
				obj = n.obj.depth(g, n, obj)
			}
			arr := int32(1)
			for i := range min(int(n.minItems), len(n.prefix)+1) {
				arr = max(arr, 1+g.nodes[n.itemAt(uint32(i))].minDepth) // every item up to minItems must come
			}
			obj, arr = min(obj, inf), min(arr, inf)
			d := int32(inf)
			if n.enum >= 0 || n.types&^(tObject|tArray) != 0 {
				d = 0
			}
			if n.types&tObject != 0 {
				d = min(d, obj)
			}
			if n.types&tArray != 0 {
				d = min(d, arr)
			}
			if obj != n.objDepth || arr != n.arrDepth || d != n.minDepth {
				n.minDepth, n.objDepth, n.arrDepth = d, obj, arr
				changed = true
			}
		}
	}
	for i := range g.nodes {
		n := &g.nodes[i]
		for room := range n.blocked {
			if n.wide != nil {
				clear(n.wide.blocked[room])
			}
			for bit, p := range n.props {
				d := g.nodes[p].minDepth
				if n.obj != nil {
					d = n.obj.propDepth(g, n, bit)
				}
				if d <= int32(room) {
					continue
				}
				if n.wide != nil {
					setBit(n.wide.blocked[room], bit)
				} else {
					n.blocked[room] |= 1 << bit
				}
			}
		}
	}
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

// maxRefHops bounds a chain of $refs that lead to $refs.
const maxRefHops = 64

// ref compiles a reference within the document (a JSON pointer, as
// "#/$defs/Name" or "#/properties/a~1b/items"), once: a recursive
// reference finds the node being built. A chain of $refs is followed;
// one that comes back to itself with no object or array in between
// (no value could ever be finished) is refused.
func (c *compiler) ref(ref any, at string) (int32, error) {
	name, ok := ref.(string)
	if !ok {
		return 0, fmt.Errorf("schema %s: $ref must be a string", at)
	}
	target, key, err := c.resolve(name)
	if err != nil {
		return 0, fmt.Errorf("schema %s: $ref %q: %w", at, name, err)
	}
	if idx, ok := c.refs[key]; ok {
		return idx, nil
	}
	idx := int32(len(c.g.nodes))
	c.refs[key] = idx
	c.g.nodes = append(c.g.nodes, node{pending: true})
	sub, err := c.schema(target, key)
	if err != nil {
		return 0, err
	}
	if c.g.nodes[sub].pending {
		return 0, fmt.Errorf("schema %s: $ref %q leads back to itself with no object or array in between", at, name)
	}
	c.g.nodes[idx] = c.g.nodes[sub]
	return idx, nil
}

// resolve finds the schema a $ref points at, and the pointer's canonical
// form: "#" and a JSON pointer after it, percent-decoded, with ~1 for /
// and ~0 for ~ in its segments, through objects and arrays alike.
// References to other documents, and to anchors, are refused.
func (c *compiler) resolve(ref string) (any, string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", errors.New("only references within the schema (starting with #) are supported")
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, "", err
	}
	if frag == "" {
		return c.root, "#", nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, "", errors.New("anchors are not supported, only JSON pointers")
	}
	cur := c.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			cur, ok = v[tok]
		case []any:
			var i int
			i, err = strconv.Atoi(tok)
			ok = err == nil && i >= 0 && i < len(v) && strconv.Itoa(i) == tok
			if ok {
				cur = v[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, "", fmt.Errorf("nothing at %q", tok)
		}
	}
	return cur, "#" + frag, nil
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

// properties compiles properties, required and additionalProperties.
// Undeclared properties are refused when "properties" is given and
// additionalProperties is not (a stricter default than JSON Schema's).
func (c *compiler) properties(n *node, s map[string]any, at string) error {
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	var required []string
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, ok := r.(string)
			if !ok {
				return fmt.Errorf("schema %s: required must list strings", at)
			}
			required = append(required, name)
			if _, ok := props[name]; !ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	deps, err := dependencies(s, at)
	if err != nil {
		return err
	}
	for name, list := range deps {
		for _, r := range append([]string{name}, list...) {
			if _, ok := props[r]; !ok && !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	var conflicts [][]string
	if ns, ok := s["not"]; ok {
		if _, isTypes, _ := typesOnly(ns, at); !isTypes {
			conflicts, _, _ = presence(ns)
		}
	}
	for _, t := range conflicts {
		for _, r := range t {
			if _, ok := props[r]; !ok && !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	if len(names) > maxProps {
		return fmt.Errorf("schema %s: more than %d properties", at, maxProps)
	}
	// forbidden: JSON Schema refuses undeclared properties (not only the
	// controller's default), so a required one cannot come.
	forbidden := false
	switch extra := s["additionalProperties"].(type) {
	case nil:
		if props != nil {
			n.extra = -1
		}
	case bool:
		if !extra {
			n.extra, forbidden = -1, true
		}
	default:
		var err error
		if n.extra, err = c.schema(extra, at+"/additionalProperties"); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		if err := c.compilePatternProps(n, s, props, at); err != nil {
			return err
		}
		return c.objectRules(n, s, deps, conflicts, at)
	}
	n.keys = c.g.lits.newNode()
	if len(names) > 64 {
		n.wide = newWide(len(names))
	}
	for i, name := range names {
		sub, ok := props[name]
		idx := int32(anyNode)
		if ok {
			var err error
			if idx, err = c.schema(sub, at+"/properties/"+name); err != nil {
				return err
			}
		} else if n.extra >= 0 {
			idx = n.extra
		} else if forbidden {
			idx = neverNode
		}
		n.props = append(n.props, idx)
		n.names = append(n.names, name)
		if n.wide != nil {
			setBit(n.wide.all, i)
			if slices.Contains(required, name) {
				setBit(n.wide.required, i)
			}
			c.g.addWide(n.wide, n.keys, keyLit(name), i)
			continue
		}
		bit := uint64(1) << i
		n.all |= bit
		if slices.Contains(required, name) {
			n.required |= bit
		}
		c.g.lits.add(n.keys, keyLit(name), int32(i), bit)
	}
	if err := c.compilePatternProps(n, s, props, at); err != nil {
		return err
	}
	return c.objectRules(n, s, deps, conflicts, at)
}

// dependencies reads dependentRequired, and draft-07's dependencies
// whose values are arrays (one with a schema is refused, naming it).
func dependencies(s map[string]any, at string) (map[string][]string, error) {
	deps := map[string][]string{}
	for _, k := range []string{"dependentRequired", "dependencies"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: %s must be an object", at, k)
		}
		for name, list := range m {
			arr, ok := list.([]any)
			if !ok {
				return nil, fmt.Errorf("schema %s: keyword %q with a schema for %q is not enforced by the json controller (only lists of property names are)", at, k, name)
			}
			for _, r := range arr {
				r, ok := r.(string)
				if !ok {
					return nil, fmt.Errorf("schema %s: %s must list property names", at, k)
				}
				deps[name] = append(deps[name], r)
			}
		}
	}
	return deps, nil
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

// sameValue reports whether two decoded JSON values are equal as JSON
// Schema compares them (numbers by value: 1 and 1.0 are equal).
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case stdjson.Number:
		b, ok := b.(stdjson.Number)
		if !ok {
			return false
		}
		return canonNum(string(a)) == canonNum(string(b))
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, sameValue)
	}
	return a == b
}

// canonNum writes a JSON number as sign, significant digits and
// exponent, so that equal numbers give equal strings (1, 1.0 and 10e-1
// all give "1e0"). An exponent too long to add to is kept as written.
func canonNum(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exps, _ := strings.Cut(strings.ToLower(s), "e")
	exp, err := strconv.ParseInt(exps, 10, 32)
	if exps == "" {
		exp, err = 0, nil
	}
	if err != nil {
		return s
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(ip+fp, "0")
	exp -= int64(len(fp))
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return "0"
	}
	if neg {
		digits = "-" + digits
	}
	return digits + "e" + strconv.FormatInt(exp, 10)
}

// typeOf returns the types a decoded value belongs to.
func typeOf(v any) uint8 {
	switch v := v.(type) {
	case map[string]any:
		return tObject
	case []any:
		return tArray
	case string:
		return tString
	case stdjson.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return tNumber
		}
		return tNumber | tInteger
	case bool:
		return tBoolean
	}
	return tNull
}

// encode writes v as compact JSON without HTML escaping.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := stdjson.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // decoded JSON always encodes
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// keyLit writes a string as a trie of names or excluded values holds it:
// as encode does, but U+2028 and U+2029 raw (encode escapes them), so
// that only the characters JSON must escape are escaped, each one way.
func keyLit(s string) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(encode(s), []byte(`\u2028`), []byte("\u2028")), []byte(`\u2029`), []byte("\u2029"))
}

// lits holds byte tries of literal strings: JSON keywords, enum values
// and property names.
type lits struct {
	edges map[uint64]int32 // node<<8 | byte → child
	term  []int32          // value ending at a node, or -1
	sub   []uint64         // bits of the values below a node (property names)
	wsub  [][]uint64       // the same in the key trie of a wide object (nil elsewhere)
}

func (t *lits) newNode() int32 {
	t.term = append(t.term, -1)
	t.sub = append(t.sub, 0)
	t.wsub = append(t.wsub, nil)
	return int32(len(t.term) - 1)
}

func (t *lits) child(n int32, b byte) int32 {
	if c, ok := t.edges[uint64(n)<<8|uint64(b)]; ok {
		return c
	}
	return -1
}

// add inserts s below root, ending with val and marking bit on its path.
func (t *lits) add(root int32, s []byte, val int32, bit uint64) {
	n := root
	for _, b := range s {
		c := t.child(n, b)
		if c < 0 {
			c = t.newNode()
			t.edges[uint64(n)<<8|uint64(b)] = c
		}
		t.sub[c] |= bit
		n = c
	}
	t.term[n] = val
}
