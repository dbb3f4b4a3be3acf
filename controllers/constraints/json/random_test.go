package json

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

// TestRandomSchemas generates schemas from the keywords the controller
// enforces, combined at random (nested objects and arrays, bounds,
// patterns, formats, enums, patternProperties, propertyNames, uniqueItems, not of required properties, tuples in either draft's form, anyOf, oneOf,
// allOf, $ref), walks random
// replies through the controller's masks on the Llama 3 vocabulary, and
// validates every finished reply with an independent JSON Schema
// validator (santhosh-tekuri/jsonschema, draft 2020-12, formats asserted).
// A schema the controller refuses is counted, not failed: refusing is
// sound. Every reply that finishes must be valid, and none may stop
// unfinished because no token could continue it (a dead end).
func TestRandomSchemas(t *testing.T) {
	l := llama(t)
	schemas, replies := 120, 3
	if testing.Short() {
		schemas = 25
	}
	rng := rand.New(rand.NewPCG(26, 2))
	accepted, finished := 0, 0
	for i := range schemas {
		src := randomSchema(t, rng)
		check := compileReference(t, string(src))
		s, err := sdktest.NewSession(New(), string(src), l.Vocab, l.Host())
		if err != nil {
			continue // refused, naming why: sound
		}
		accepted++
		for seed := range replies {
			opt := sdktest.Options{Seed: uint64(1000*i + seed), MaxTokens: 600, Prefer: closer(l), PreferBias: 0.5}
			rep, err := s.Reply(opt)
			if err != nil {
				t.Fatalf("schema %d %s, seed %d: %v", i, src, seed, err)
			}
			if rep.End == sdktest.EndFail || rep.End == sdktest.EndEmptyMask {
				t.Errorf("schema %d %s, seed %d: a dead end after %q (%s)", i, src, seed, rep.Text, rep.End)
				continue
			}
			if rep.End != sdktest.EndStop && rep.End != sdktest.EndToken {
				continue // the token limit: not a finished value
			}
			finished++
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rep.Text))
			if err == nil {
				err = check.Validate(inst)
			}
			if err != nil {
				t.Errorf("schema %d %s, seed %d: reply %q is not valid: %v", i, src, seed, rep.Text, err)
			}
		}
	}
	t.Logf("%d random schemas: %d accepted, %d finished replies, each valid", schemas, accepted, finished)
	if accepted < schemas/2 {
		t.Errorf("only %d of %d generated schemas accepted: the generator strays from what the controller enforces", accepted, schemas)
	}
}

// FuzzRandomSchemas is TestRandomSchemas driven by the fuzzer: a seed
// picks the schema (from the same generator) and the reply's walk
// (`go test -fuzz FuzzRandomSchemas ./controllers/constraints/json/`).
func FuzzRandomSchemas(f *testing.F) {
	l := llama(f)
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, schemaSeed, walkSeed uint64) {
		src := randomSchema(t, rand.New(rand.NewPCG(schemaSeed, 0)))
		s, err := sdktest.NewSession(New(), string(src), l.Vocab, l.Host())
		if err != nil {
			return
		}
		rep, err := s.Reply(sdktest.Options{Seed: walkSeed, MaxTokens: 600, Prefer: closer(l), PreferBias: 0.5})
		if err != nil {
			t.Fatalf("schema %s: %v", src, err)
		}
		if rep.End == sdktest.EndFail || rep.End == sdktest.EndEmptyMask {
			t.Fatalf("schema %s: a dead end after %q (%s)", src, rep.Text, rep.End)
		}
		if rep.End != sdktest.EndStop && rep.End != sdktest.EndToken {
			return
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rep.Text))
		if err == nil {
			err = compileReference(t, string(src)).Validate(inst)
		}
		if err != nil {
			t.Errorf("schema %s: reply %q is not valid: %v", src, rep.Text, err)
		}
	})
}

// randomSchema is a schema from the generator, as JSON.
func randomSchema(t testing.TB, r *rand.Rand) []byte {
	g := &schemaGen{r: r, oldTuples: r.IntN(3) == 0}
	root := g.value(0)
	if len(g.defs) > 0 {
		root["$defs"] = g.defs
	}
	if g.oldTuples {
		// Tuples as items arrays and additionalItems: draft 2019-09's
		// form, which the reference validator reads under its $schema.
		root["$schema"] = "https://json-schema.org/draft/2019-09/schema"
	} else if r.IntN(2) == 0 {
		root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	}
	src, err := stdjson.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// compileReference compiles src with the reference validator.
func compileReference(t testing.TB, src string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("the reference validator refuses the generated schema %s: %v", src, err)
	}
	return sch
}

// schemaGen makes random schemas; defs collects the $defs that $refs
// point to.
type schemaGen struct {
	r    *rand.Rand
	defs map[string]any
	// oldTuples writes tuples in the form of drafts up to 2019-09 (items
	// as an array, additionalItems) rather than prefixItems.
	oldTuples bool
}

var (
	genPatterns    = []string{"^[a-z]+$", "^[0-9]{3}-[0-9]{4}$", "ab", "^x", "[A-Z][a-z]*", "^(yes|no)$", "^[0-9]{5}$", "^(ab)+$"}
	genKeyPatterns = []string{"^p[0-9]$", "^x", "[0-9]", "^(ab)+$", "z$", "^p1$", "^q.?$", "^[a-z]{2}$"}
	genFormats     = []string{"date", "time", "date-time", "uuid", "ipv4", "email", "uri", "uri-reference", "hostname", "byte"}
	genConsts      = []any{"red", 3, true, nil, 1.5, "a b", []any{1, "x"}, map[string]any{"k": 1}}
)

// value is a schema for any value, depth levels down.
func (g *schemaGen) value(depth int) map[string]any {
	kinds := []string{"string", "integer", "number", "boolean", "null", "enum", "const", "not"}
	if depth < 3 {
		kinds = append(kinds, "object", "object", "array", "tuple", "tuple", "anyOf", "oneOf", "allOf", "allOf", "ref")
	}
	switch k := kinds[g.r.IntN(len(kinds))]; k {
	case "string":
		s := map[string]any{"type": "string", "maxLength": 1 + g.r.IntN(30)}
		switch g.r.IntN(4) {
		case 0:
			s["pattern"] = genPatterns[g.r.IntN(len(genPatterns))]
			s["maxLength"] = 40
			if g.r.IntN(2) == 0 { // lengths the pattern may not fit
				s["minLength"], s["maxLength"] = g.r.IntN(7), 3+g.r.IntN(8)
			}
		case 1:
			s["format"] = genFormats[g.r.IntN(len(genFormats))]
			delete(s, "maxLength")
		case 2:
			s["minLength"] = g.r.IntN(3)
		}
		return s
	case "integer", "number":
		s := map[string]any{"type": k}
		if g.r.IntN(2) == 0 {
			s["minimum"] = g.r.IntN(200) - 100
		}
		if g.r.IntN(2) == 0 {
			s["exclusiveMaximum"] = 100 + g.r.IntN(1000)
		}
		if g.r.IntN(3) == 0 {
			s["multipleOf"] = []any{2, 5, 0.5, 0.25}[g.r.IntN(4)]
			if k == "integer" {
				s["multipleOf"] = []any{2, 3, 5}[g.r.IntN(3)]
			}
		}
		return s
	case "boolean", "null":
		return map[string]any{"type": k}
	case "not":
		names := []any{"string", "integer", "number", "boolean", "null"}
		var ts []any
		for _, j := range g.r.Perm(len(names))[:2+g.r.IntN(2)] {
			ts = append(ts, names[j])
		}
		return map[string]any{"type": ts, "not": map[string]any{"type": ts[g.r.IntN(len(ts))]}}
	case "enum":
		n := 1 + g.r.IntN(4)
		var vals []any
		for _, j := range g.r.Perm(len(genConsts))[:n] {
			vals = append(vals, genConsts[j])
		}
		return map[string]any{"enum": vals}
	case "const":
		return map[string]any{"const": genConsts[g.r.IntN(len(genConsts))]}
	case "object":
		return g.object(depth)
	case "array":
		s := map[string]any{"type": "array", "items": g.value(depth + 1), "maxItems": 1 + g.r.IntN(3)}
		if g.r.IntN(2) == 0 {
			s["minItems"] = 1
		}
		if g.r.IntN(3) == 0 {
			// Unique items of few values (refused where items take more).
			s["uniqueItems"] = true
			if g.r.IntN(3) != 0 {
				s["items"] = map[string]any{"enum": genConsts[:2+g.r.IntN(len(genConsts)-2)]}
			}
		}
		return s
	case "tuple":
		return g.tuple(depth)
	case "anyOf", "oneOf":
		// Branches of different kinds: disjoint, as oneOf needs.
		arr := map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "maxItems": 2}
		if g.r.IntN(2) == 0 {
			arr = g.tuple(depth + 1)
		}
		types := []map[string]any{
			{"type": "string", "maxLength": 8}, {"type": "integer", "maximum": 50}, {"type": "null"},
			{"type": "boolean"}, g.object(depth + 1), arr,
		}
		var branches []any
		for _, j := range g.r.Perm(len(types))[:2+g.r.IntN(2)] {
			branches = append(branches, types[j])
		}
		return map[string]any{k: branches}
	case "allOf":
		a, b := g.object(depth+1), g.object(depth+1)
		if g.r.IntN(2) == 0 { // tuples merged item by item
			a = g.tuple(depth + 1)
			if g.r.IntN(2) == 0 {
				b = g.tuple(depth + 1)
			} else {
				b = map[string]any{"items": g.value(depth + 1), "maxItems": 1 + g.r.IntN(4)}
			}
		}
		return map[string]any{"allOf": []any{a, b}}
	default: // ref
		if g.defs == nil {
			g.defs = map[string]any{}
		}
		name := fmt.Sprintf("d%d", len(g.defs))
		g.defs[name] = g.value(depth + 1)
		return map[string]any{"$ref": "#/$defs/" + name}
	}
}

// object is an object schema of one to four properties, some required.
func (g *schemaGen) object(depth int) map[string]any {
	props, req := map[string]any{}, []any{}
	for i := range 1 + g.r.IntN(4) {
		name := fmt.Sprintf("p%d", i)
		props[name] = g.value(depth + 1)
		if g.r.IntN(2) == 0 {
			req = append(req, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "required": req}
	switch g.r.IntN(6) {
	case 0, 1:
		s["additionalProperties"] = false
	case 2:
		s["additionalProperties"] = map[string]any{"type": "integer"}
	}
	if g.r.IntN(3) == 0 {
		// Patterns that match declared names (p0…p3), undeclared ones,
		// each other's names or finitely many names; a schema, or false.
		pp := map[string]any{}
		for range 1 + g.r.IntN(2) {
			var v any = g.value(depth + 1)
			if g.r.IntN(5) == 0 {
				v = false
			}
			pp[genKeyPatterns[g.r.IntN(len(genKeyPatterns))]] = v
		}
		s["patternProperties"] = pp
	}
	if g.r.IntN(4) == 0 {
		// Names held to a pattern, lengths, a list, or none at all.
		s["propertyNames"] = []any{
			map[string]any{"pattern": genKeyPatterns[g.r.IntN(len(genKeyPatterns))]},
			map[string]any{"maxLength": 1 + g.r.IntN(3), "minLength": g.r.IntN(2)},
			map[string]any{"enum": []any{"p0", "p2", "x1", 4}},
			map[string]any{"type": "string", "format": "ipv4"},
			false,
		}[g.r.IntN(5)]
	}
	n := len(props)
	if g.r.IntN(4) == 0 {
		s["minProperties"] = g.r.IntN(n + 1)
	}
	if g.r.IntN(4) == 0 {
		s["maxProperties"] = g.r.IntN(n + 1)
	}
	if g.r.IntN(4) == 0 {
		// A property makes others required; names beyond the declared
		// ones too (p9: undeclared, so impossible under
		// additionalProperties false).
		deps := map[string]any{}
		for range 1 + g.r.IntN(2) {
			from := fmt.Sprintf("p%d", g.r.IntN(n))
			deps[from] = []any{fmt.Sprintf("p%d", g.r.IntN(n)), "p9"}[:1+g.r.IntN(2)]
		}
		s["dependentRequired"] = deps
	}
	pick := func() any {
		i, j := g.r.IntN(n), g.r.IntN(n)
		if i == j {
			return []any{fmt.Sprintf("p%d", i)}
		}
		return []any{fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", j)}
	}
	if g.r.IntN(4) == 0 {
		// Sets of properties that may not all come (one of them maybe
		// required, or needed by a dependency).
		s["not"] = []map[string]any{
			{"required": pick()},
			{"anyOf": []any{map[string]any{"required": pick()}, map[string]any{"required": pick()}}},
			{"type": "object", "required": pick()},
		}[g.r.IntN(3)]
	}
	if g.r.IntN(4) == 0 {
		// One of these sets of properties must come (oneOf: one
		// branch alone).
		s[[]string{"anyOf", "oneOf"}[g.r.IntN(2)]] = []any{map[string]any{"required": pick()}, map[string]any{"required": pick()}}
	}
	return s
}

// tuple is an array schema whose first items have schemas of their own
// (one may be false), then a rest that is false, a schema or absent, in
// the form oldTuples chooses, and perhaps item counts.
func (g *schemaGen) tuple(depth int) map[string]any {
	n := 1 + g.r.IntN(3)
	prefix := make([]any, n)
	for i := range prefix {
		prefix[i] = g.value(depth + 1)
	}
	if g.r.IntN(5) == 0 {
		prefix[g.r.IntN(n)] = false
	}
	var rest any
	switch g.r.IntN(3) {
	case 0:
		rest = false
	case 1:
		rest = g.value(depth + 1)
	}
	s := map[string]any{"type": "array"}
	if g.oldTuples {
		s["items"] = prefix
		if rest != nil {
			s["additionalItems"] = rest
		}
	} else {
		s["prefixItems"] = prefix
		if rest != nil {
			s["items"] = rest
		}
	}
	if g.r.IntN(2) == 0 {
		s["minItems"] = g.r.IntN(n + 2)
	}
	if rest != false || g.r.IntN(2) == 0 {
		s["maxItems"] = g.r.IntN(n + 3)
		if lo, ok := s["minItems"].(int); ok && lo > s["maxItems"].(int) && g.r.IntN(4) != 0 {
			s["minItems"], s["maxItems"] = s["maxItems"], lo // mostly bounds that some array fits
		}
	}
	return s
}

// TestFormatsValid walks replies through each format the controller
// enforces, as a string and as a property, and checks every finished one
// with the reference validator asserting formats (OpenAPI's numeric
// formats as integer bounds: the validator does not know them, so the
// bounds are checked here).
func TestFormatsValid(t *testing.T) {
	l := llama(t)
	replies := 40
	if testing.Short() {
		replies = 8
	}
	for _, f := range append(slices.Sorted(maps.Keys(formats)), "int32", "int64") {
		src := fmt.Sprintf(`{"type":"object","properties":{"v":{"type":"string","format":%q}},"required":["v"],"additionalProperties":false}`, f)
		if _, num := numFormats[f]; num {
			src = fmt.Sprintf(`{"type":"object","properties":{"v":{"type":"number","format":%q}},"required":["v"],"additionalProperties":false}`, f)
		}
		check := compileReference(t, src)
		s, err := sdktest.NewSession(New(), src, l.Vocab, l.Host())
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		finished := 0
		for seed := range replies {
			rep, err := s.Reply(sdktest.Options{Seed: uint64(seed), MaxTokens: 120, Prefer: closer(l), PreferBias: 0.3})
			if err != nil {
				t.Fatal(err)
			}
			if rep.End == sdktest.EndFail || rep.End == sdktest.EndEmptyMask {
				t.Errorf("%s: a dead end after %q", f, rep.Text)
				continue
			}
			if rep.End != sdktest.EndStop && rep.End != sdktest.EndToken {
				continue
			}
			finished++
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rep.Text))
			if err == nil {
				err = check.Validate(inst)
			}
			if err == nil && numFormats[f] != [2]string{} {
				var v struct{ V stdjson.Number }
				if err = stdjson.Unmarshal(rep.Text, &v); err == nil {
					lo, _ := new(big.Int).SetString(numFormats[f][0], 10)
					hi, _ := new(big.Int).SetString(numFormats[f][1], 10)
					x, ok := new(big.Int).SetString(string(v.V), 10)
					if !ok || x.Cmp(lo) < 0 || x.Cmp(hi) > 0 {
						err = fmt.Errorf("%s is not an integer in %s's range", v.V, f)
					}
				}
			}
			if err != nil {
				t.Errorf("%s: reply %q is not valid: %v", f, rep.Text, err)
			}
		}
		if finished < replies/4 {
			t.Errorf("%s: only %d of %d replies finished", f, finished, replies)
		}
	}
}
