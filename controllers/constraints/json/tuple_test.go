package json

import (
	"strings"
	"testing"
)

// TestTuples: prefixItems (draft 2020-12) with items for the rest, and
// the earlier drafts' items array with additionalItems; item i is held
// to its own schema, false ends the tuple, and allOf merges item by item.
func TestTuples(t *testing.T) {
	pair := `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string","maxLength":3}]}`
	closed := `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false}`
	rest := `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"maxItems":3}`
	d7 := `{"type":"array","items":[{"type":"integer"},{"type":"null"}],"additionalItems":{"type":"boolean"}}`
	d7closed := `{"items":[{"type":"integer"}],"additionalItems":false}`
	d7open := `{"items":[{"type":"integer"}]}`
	short := `{"prefixItems":[{"type":"integer"},false,{"type":"string"}]}`
	least := `{"prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"minItems":1}`
	merged := `{"allOf":[{"prefixItems":[{"minimum":3}]}],"items":{"minimum":5}}`
	both := `{"allOf":[{"prefixItems":[{"type":"integer"},{"type":"string"}]},{"prefixItems":[{"minimum":2}],"items":false}]}`
	nested := `{"$defs":{"pt":{"prefixItems":[{"type":"number"},{"type":"number"}],"items":false,"minItems":2}},"type":"array","items":{"$ref":"#/$defs/pt"},"maxItems":2}`
	union := `{"$defs":{"i":{"type":"integer"}},"anyOf":[{"prefixItems":[{"$ref":"#/$defs/i"}],"items":false,"maxItems":1},{"prefixItems":[{"$ref":"#/$defs/i"}],"items":false,"minItems":1},{"type":"null"}]}`
	checkAccepts(t, []acceptCase{
		{pair, `[]`, true}, {pair, `[1]`, true}, {pair, `[1,"abc"]`, true}, {pair, `[1,"abc",{"x":[]}]`, true},
		{pair, `["a"]`, false}, {pair, `[1,2]`, false}, {pair, `[1,"abcd"]`, false},
		{closed, `[1,"x"]`, true}, {closed, `[1]`, true}, {closed, `[1,"x",2]`, false},
		{rest, `["a",1,2]`, true}, {rest, `["a","b"]`, false}, {rest, `["a",1,2,3]`, false}, {rest, `[1]`, false},
		{d7, `[1,null,true,false]`, true}, {d7, `[1,null,1]`, false}, {d7, `[null]`, false}, {d7, `[1]`, true},
		{d7closed, `[1]`, true}, {d7closed, `[1,2]`, false}, {d7closed, `[]`, true},
		{d7open, `[1,"x",null]`, true}, {d7open, `["x"]`, false},
		{short, `[1]`, true}, {short, `[1,2]`, false}, {short, `[1,"x"]`, false},
		{least, `[]`, false}, {least, `[1]`, true}, {least, `[1,"a"]`, true},
		{merged, `[3]`, false}, {merged, `[5,5]`, true}, {merged, `[5,4]`, false},
		{both, `[2,"a"]`, false}, {both, `[2]`, true}, {both, `[1]`, false}, {both, `["a"]`, false},
		{nested, `[[1,2],[3,4]]`, true}, {nested, `[[1]]`, false}, {nested, `[[1,2,3]]`, false},
		{union, `[1]`, true}, {union, `[]`, true}, {union, `null`, true}, {union, `[1,2]`, false},
	})
}

// TestTuplesNoDeadEnds: a comma is taken only where the next item can
// come (its schema takes a value, within the nesting left), and an array
// whose first minItems items cannot all come cannot open.
func TestTuplesNoDeadEnds(t *testing.T) {
	for _, c := range []struct{ schema, text string }{
		{`{"prefixItems":[{"type":"integer"},false]}`, `[1`},
		{`{"prefixItems":[{"type":"integer"},{"enum":[]}]}`, `[1`},
		{`{"prefixItems":[{"type":"integer"},{"type":"string","minLength":3,"maxLength":2}]}`, `[1`},
		{`{"items":[{"type":"integer"}],"additionalItems":false}`, `[1`},
		{`{"prefixItems":[{}],"items":false}`, `[1`},
	} {
		g := newGrammar()
		root, err := g.compileSchema(c.schema)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		g.root = root
		s := g.Start()
		for i := range len(c.text) {
			var ok bool
			if s, ok = g.Next(s, c.text[i]); !ok {
				t.Fatalf("%s: %q refused at %d", c.schema, c.text, i)
			}
		}
		if _, ok := g.Next(s, ','); ok {
			t.Errorf("%s: a comma after %q, where no item can follow", c.schema, c.text)
		}
		if _, ok := g.Next(s, ']'); !ok {
			t.Errorf("%s: no closing bracket after %q", c.schema, c.text)
		}
	}
	// No array fits: refused at the root, impossible as a property.
	for _, sc := range []string{
		`{"type":"array","prefixItems":[{"type":"integer"},false],"minItems":2}`,
		`{"type":"array","items":[{"type":"integer"}],"additionalItems":false,"minItems":2}`,
		`{"type":"array","prefixItems":[{"type":"integer"}],"items":{"enum":[]},"minItems":2}`,
	} {
		if _, err := newGrammar().compileSchema(sc); err == nil || !strings.Contains(err.Error(), "no value is valid") {
			t.Errorf("%s: %v, want it refused as taking no value", sc, err)
		}
	}
	checkAccepts(t, []acceptCase{
		{`{"type":"object","properties":{"a":{"type":"array","prefixItems":[false],"minItems":1}}}`, `{"a":[]}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","prefixItems":[false],"minItems":1}}}`, `{}`, true},
	})
	// A recursive tuple: its first item nests one level deeper each time,
	// so the nesting limit bounds it; the shallow spelling still closes.
	rec := `{"$defs":{"t":{"type":["array","null"],"prefixItems":[{"$ref":"#/$defs/t"}],"items":false,"minItems":1}},"$ref":"#/$defs/t"}`
	deep := strings.Repeat("[", maxDepth) + "null" + strings.Repeat("]", maxDepth)
	checkAccepts(t, []acceptCase{{rec, `[[null]]`, true}, {rec, deep, true}, {rec, "[" + deep + "]", false}})
}

// TestTuplesRefused: what cannot be enforced exactly, or whose reading
// depends on the draft, is refused with a message saying why.
func TestTuplesRefused(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"prefixItems":[{}],"additionalItems":false}`, `"prefixItems" (draft 2020-12) beside`},
		{`{"prefixItems":[{}],"items":[{}]}`, `"prefixItems" (draft 2020-12) beside`},
		{`{"prefixItems":[]}`, `prefixItems must be a non-empty array`},
		{`{"prefixItems":{"type":"integer"}}`, `prefixItems must be a non-empty array`},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","items":[{}]}`, `where #/$schema has "prefixItems"`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","prefixItems":[{}]}`, `where #/$schema has "items" as an array`},
		{`{"type":"object","properties":{"a":{"prefixItems":[{}],"items":{"type":"integer"}},"b":{"items":[{}]}}}`, `the drafts read "items" differently`},
		{`{"allOf":[{"prefixItems":[{}]},{"items":[{}]}]}`, `the drafts read "items" differently`},
		{`{"anyOf":[{"prefixItems":[{"type":"integer"}]},{"prefixItems":[{"type":"string"}]}]}`, `array branches with different items`},
		{`{"prefixItems":[{"type":"boolean"}],"uniqueItems":true}`, `"uniqueItems"`},
	} {
		err := New().Init(c.schema, llama(t).Vocab, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it refused, saying %q", c.schema, err, c.want)
		}
	}
	for _, sc := range []string{
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","items":[{"type":"integer"}],"additionalItems":false}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"integer"}],"items":false}`,
		`{"items":[{"type":"integer"}],"properties":{"a":{"items":{"type":"string"}}}}`,
	} {
		if err := New().Init(sc, llama(t).Vocab, nil); err != nil {
			t.Errorf("%s: %v", sc, err)
		}
	}
	// additionalItems without an array of items: ignored, as every draft
	// ignores it there.
	for _, sc := range []string{`{"type":"array","additionalItems":false}`, `{"type":"array","items":{},"additionalItems":false}`} {
		if !accepts(t, sc, `[1,2]`) {
			t.Errorf("%s refuses [1,2]", sc)
		}
	}
}

// TestUniqueItems: under uniqueItems an array of enum, const, boolean or
// null items takes each value once (1 and 1.0 are one value), no item
// starts that could only end as a value written, and an array that
// needs more items than there are values cannot be; with at most one
// item, any items.
func TestUniqueItems(t *testing.T) {
	checkCases(t, []coverageCase{
		{"uniqueItems", `{"type":"array","items":{"enum":["a","ab",1,1.0,{"k":[1]}]},"uniqueItems":true}`,
			[]string{`[]`, `["ab","a",1]`, `[{"k":[1]},"a"]`, `[1.0,"a"]`},
			[]string{`["a","a"]`, `[1,1.0]`, `[1.0,1]`, `[{"k":[1]},{"k":[1]}]`, `["ab","a","ab"]`}},
		{"uniqueItems", `{"type":"array","items":{"type":["boolean","null"]},"uniqueItems":true,"minItems":2}`,
			[]string{`[true,false]`, `[null,true,false]`},
			[]string{`[true,true]`, `[null,null]`, `[false]`, `[true,false,null,true]`}},
		{"uniqueItems", `{"type":"array","items":{"type":"string"},"uniqueItems":true,"maxItems":1}`,
			[]string{`["x"]`, `[]`},
			[]string{`["x","y"]`}},
		{"uniqueItems", `{"allOf":[{"type":"array","items":{"const":"x"}},{"uniqueItems":true}]}`,
			[]string{`["x"]`},
			[]string{`["x","x"]`}},
	})
	// "a" written, the next item's "a cannot stop there but goes on to "ab".
	for prefix, want := range map[string]bool{`["a","a`: true, `["a","a"`: false, `["a","ab","`: false, `["ab","a"`: true} {
		if ok := takes(t, `{"type":"array","items":{"enum":["a","ab"]},"uniqueItems":true}`, prefix); ok != want {
			t.Errorf("%s: taken %v, want %v", prefix, ok, want)
		}
	}
	// Three items of two values: no array is valid.
	if _, err := newGrammar().compileSchema(`{"type":"array","items":{"type":"boolean"},"uniqueItems":true,"minItems":3}`); err == nil || !strings.Contains(err.Error(), "no value is valid") {
		t.Errorf("three unique booleans: %v; want no value valid", err)
	}
}
