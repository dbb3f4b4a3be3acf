package json

import (
	"strings"
	"testing"
)

// TestPatternProperties: a property whose name matches patterns is held
// to every matching pattern's schema (and its own, when declared);
// additionalProperties only to names that match nothing; and undeclared
// names take no escape.
func TestPatternProperties(t *testing.T) {
	for _, c := range []struct {
		schema string
		ok     []string
		bad    []string
	}{
		{`{"type":"object","patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false}`,
			[]string{`{}`, `{"x-a":"s","x-":"t"}`},
			[]string{`{"x-a":1}`, `{"y":"s"}`, `{"x\u002da":"s"}`}},
		// Both patterns' schemas where both match; each alone elsewhere.
		{`{"type":"object","patternProperties":{"a":{"type":"integer"},"b":{"minimum":10}}}`,
			[]string{`{"a":1,"b":12,"ab":12,"c":"s"}`},
			[]string{`{"ab":1}`, `{"ab":"s"}`, `{"a":"s"}`, `{"b":2}`}},
		// A declared name that matches: its own schema and the pattern's.
		{`{"type":"object","properties":{"p1":{"type":"integer"}},"patternProperties":{"^p":{"maximum":5}},"additionalProperties":{"type":"string"}}`,
			[]string{`{"p1":3,"p2":5,"q":"s"}`},
			[]string{`{"p1":7}`, `{"p2":"s"}`, `{"q":1}`, `{"p1":"s"}`}},
		// A pattern whose schema is false: its names cannot come.
		{`{"type":"object","patternProperties":{"^x":false}}`,
			[]string{`{"a":1}`},
			[]string{`{"x":1}`, `{"ax":1,"xa":2}`}},
		// Required names that match a pattern take its schema.
		{`{"type":"object","required":["id"],"patternProperties":{"^i":{"type":"integer"}},"additionalProperties":false}`,
			[]string{`{"id":1}`, `{"id":1,"ix":2}`},
			[]string{`{}`, `{"id":"s"}`, `{"id":1,"x":2}`}},
		// Counts: minProperties counts a pattern's name as undeclared.
		{`{"type":"object","properties":{"a":{}},"patternProperties":{"^n[0-9]$":{"type":"null"}},"minProperties":2,"maxProperties":2}`,
			[]string{`{"a":1,"n1":null}`},
			[]string{`{"a":1}`, `{"n1":null}`, `{"a":1,"n1":null,"n2":null}`}},
	} {
		for _, text := range c.ok {
			if !accepts(t, c.schema, text) {
				t.Errorf("%s refuses %s", c.schema, text)
			}
		}
		for _, text := range c.bad {
			if accepts(t, c.schema, text) {
				t.Errorf("%s takes %s", c.schema, text)
			}
		}
	}
}

// TestPatternPropertiesNoDeadEnd: a key's byte is taken only where the
// key can still end, as a declared name that may come or an undeclared
// one whose schema takes a value at the nesting left.
func TestPatternPropertiesNoDeadEnd(t *testing.T) {
	for _, c := range []struct{ schema, prefix string }{
		// "x" can only go on to names of the false pattern.
		{`{"type":"object","patternProperties":{"^x":false}}`, `{"x`},
		// Only "ab" matches; it is declared, and taken already.
		{`{"type":"object","properties":{"ab":{}},"patternProperties":{"^ab$":{}},"additionalProperties":false}`, `{"ab":1,"a`},
		// Names of one letter only, and "a" needs a value too deep.
		{`{"type":"object","patternProperties":{"^[a-z]$":{"type":"null"},"^a$":{"type":"array","minItems":1,"items":{"$ref":"#"}}},"additionalProperties":false}`, `{"a`},
	} {
		g := newGrammar()
		root, err := g.compileSchema(c.schema)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		g.root = root
		s := g.Start()
		ok := true
		for i := 0; i < len(c.prefix) && ok; i++ {
			s, ok = g.Next(s, c.prefix[i])
		}
		if ok {
			t.Errorf("%s: takes %q, after which no key can end", c.schema, c.prefix)
		}
	}
}

// TestPatternPropertiesRefused: what is not enforced is refused, saying
// why.
func TestPatternPropertiesRefused(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","patternProperties":{"\\bx":{}}}`, `"patternProperties" "\\bx"`},
		{`{"type":"object","patternProperties":{"a[ab]{12}$":{}}}`, "more than 2048 states"},
		{`{"allOf":[{"properties":{"a":{}}},{"patternProperties":{"^x":{}}}]}`, `"patternProperties" beside another schema's "properties"`},
		{`{"type":"object","patternProperties":{"a":{"pattern":"x"},"b":{"pattern":"y"}}}`, `two different "pattern"`},
		{`{"type":"object","patternProperties":[]}`, "patternProperties must be an object"},
	} {
		err := New().Init(c.schema, llama(t).Vocab, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it refused, saying %q", c.schema, err, c.want)
		}
	}
}

// TestPropertyNames: every name, declared or not, is held to
// propertyNames (a pattern, lengths, a list, a format, false); a
// declared name it refuses cannot come, and an object that requires one
// cannot be written at all; no key starts that cannot end as a name it
// takes.
func TestPropertyNames(t *testing.T) {
	checkCases(t, []coverageCase{
		{"propertyNames", `{"type":"object","propertyNames":{"pattern":"^[a-z]+$","maxLength":3}}`,
			[]string{`{}`, `{"ab":1,"xyz":[]}`},
			[]string{`{"abcd":1}`, `{"a1":1}`, `{"":1}`}},
		{"propertyNames", `{"type":"object","properties":{"long":{},"ok":{}},"propertyNames":{"maxLength":2},"additionalProperties":{"type":"integer"}}`,
			[]string{`{"ok":1,"x":2}`},
			[]string{`{"long":1}`, `{"x":"s"}`, `{"xyz":1}`}},
		{"propertyNames", `{"type":"object","propertyNames":{"enum":["a","b",1]},"minProperties":1}`,
			[]string{`{"a":1}`, `{"b":1,"a":2}`},
			[]string{`{}`, `{"c":1}`, `{"1":1}`, `{"ab":1}`}},
		{"propertyNames", `{"type":"object","propertyNames":{"format":"ipv4","minLength":8}}`,
			[]string{`{"10.0.0.1":1}`},
			[]string{`{"1.2.3.4":1}`, `{"10.0.0.256":1}`}},
		{"propertyNames", `{"type":"object","propertyNames":false}`,
			[]string{`{}`},
			[]string{`{"a":1}`}},
		{"propertyNames", `{"type":"object","patternProperties":{"^x":{"type":"string"}},"propertyNames":{"pattern":"^x|^y"}}`,
			[]string{`{"xa":"s","y":1}`},
			[]string{`{"xa":1}`, `{"z":1}`}},
		{"propertyNames", `{"allOf":[{"propertyNames":{"pattern":"a"}},{"propertyNames":{"pattern":"b"}}]}`,
			[]string{`{"ab":1,"ba":2}`},
			[]string{`{"a":1}`, `{"b":1}`}},
	})
	// A required name that propertyNames refuses: no object is valid.
	if _, err := newGrammar().compileSchema(`{"type":"object","required":["abc"],"propertyNames":{"maxLength":2}}`); err == nil || !strings.Contains(err.Error(), "no value is valid") {
		t.Errorf("a required name propertyNames refuses: %v; want no value valid", err)
	}
	// No key takes a character after which it cannot end as a name
	// propertyNames takes.
	for _, prefix := range []string{`{"b`, `{"ab`, `{"a\u`} {
		if takes(t, `{"type":"object","propertyNames":{"enum":["a","abc"]},"maxProperties":1,"additionalProperties":{"type":"null"},"properties":{"abc":{"type":"integer","minimum":1,"maximum":0}}}`, prefix) {
			t.Errorf("%s is taken, after which no name can end", prefix)
		}
	}
}
