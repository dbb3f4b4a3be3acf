package json

import (
	"slices"
	"strings"
	"testing"
)

// accepts reports whether the grammar of schema takes text as a whole
// value, byte by byte, as the controller's masks do.
func accepts(t *testing.T, schema, text string) bool {
	t.Helper()
	g, s, ok := walk(t, schema, text)
	return ok && g.Accepts(s)
}

// takes reports whether the grammar of schema takes every byte of
// prefix, the start of a value.
func takes(t *testing.T, schema, prefix string) bool {
	t.Helper()
	_, _, ok := walk(t, schema, prefix)
	return ok
}

// walk reads text through the grammar of schema byte by byte: the state
// after it, and false where a byte is refused.
func walk(t *testing.T, schema, text string) (*grammar, state, bool) {
	t.Helper()
	g := newGrammar()
	root, err := g.compileSchema(schema)
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	g.root = root
	s := g.Start()
	for i := 0; i < len(text); i++ {
		var ok bool
		if s, ok = g.Next(s, text[i]); !ok {
			return g, s, false
		}
	}
	return g, s, true
}

// TestEveryKeywordEnforced walks the allow-list: each enforced keyword,
// given a value that restricts, refuses an instance that breaks it and
// takes one that keeps it (definitions through a $ref to them). A
// keyword added to the list without its case here fails the test.
func TestEveryKeywordEnforced(t *testing.T) {
	cases := map[string]struct{ schema, valid, invalid string }{
		"type":                 {`{"type":"integer"}`, `12`, `"12"`},
		"enum":                 {`{"enum":["a","b"]}`, `"b"`, `"c"`},
		"const":                {`{"const":3}`, `3`, `4`},
		"properties":           {`{"properties":{"a":{"type":"string"}}}`, `{"a":"x"}`, `{"a":1}`},
		"required":             {`{"type":"object","properties":{"a":{}},"required":["a"]}`, `{"a":1}`, `{}`},
		"additionalProperties": {`{"type":"object","additionalProperties":false}`, `{}`, `{"b":1}`},
		"items":                {`{"type":"array","items":{"type":"boolean"}}`, `[true]`, `[1]`},
		"minItems":             {`{"type":"array","minItems":2}`, `[1,2]`, `[1]`},
		"maxItems":             {`{"type":"array","maxItems":1}`, `[1]`, `[1,2]`},
		"minLength":            {`{"type":"string","minLength":2}`, `"ab"`, `"a"`},
		"maxLength":            {`{"type":"string","maxLength":1}`, `"a"`, `"ab"`},
		"$ref":                 {`{"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s"}`, `"x"`, `1`},
		"$defs":                {`{"$defs":{"n":{"type":"null"}},"$ref":"#/$defs/n"}`, `null`, `0`},
		"definitions":          {`{"definitions":{"n":{"type":"null"}},"$ref":"#/definitions/n"}`, `null`, `0`},
		"allOf":                {`{"allOf":[{"type":"string"},{"maxLength":2}]}`, `"ab"`, `"abc"`},
		"anyOf":                {`{"anyOf":[{"type":"string"},{"type":"null"}]}`, `null`, `1`},
		"oneOf":                {`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `1`, `true`},
		"pattern":              {`{"type":"string","pattern":"^[0-9]{5}(-[0-9]{4})?$"}`, `"12345"`, `"illill week"`},
		"format":               {`{"type":"string","format":"date"}`, `"2024-05-06"`, `"2024-05-32"`},
		"minimum":              {`{"type":"object","properties":{"port":{"type":"integer","minimum":1}}}`, `{"port":1}`, `{"port":0}`},
		"maximum":              {`{"type":"object","properties":{"sessionIndex":{"type":"integer","maximum":2147483647}}}`, `{"sessionIndex":2147483647}`, `{"sessionIndex":77777777777}`},
		"exclusiveMinimum":     {`{"type":"number","exclusiveMinimum":0}`, `0.1`, `0`},
		"exclusiveMaximum":     {`{"type":"number","exclusiveMaximum":1}`, `0.9`, `1`},
		"multipleOf":           {`{"type":"integer","multipleOf":2}`, `4`, `3`},
		"minProperties":        {`{"type":"object","minProperties":1}`, `{"a":1}`, `{}`},
		"maxProperties":        {`{"type":"object","maxProperties":1}`, `{"a":1}`, `{"a":1,"b":2}`},
		"dependentRequired":    {`{"type":"object","dependentRequired":{"a":["b"]}}`, `{"a":1,"b":2}`, `{"a":1}`},
		"dependencies":         {`{"type":"object","dependencies":{"a":["b"]}}`, `{"b":2,"a":1}`, `{"a":1,"c":2}`},
		"not":                  {`{"type":["string","null"],"not":{"type":"null"}}`, `"x"`, `null`},
		"prefixItems":          {`{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]}`, `[1,"a",null]`, `[1,2]`},
		"patternProperties":    {`{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`, `{"x-a":"s"}`, `{"x-a":1}`},
		"propertyNames":        {`{"type":"object","propertyNames":{"pattern":"^[a-z]+$","maxLength":3}}`, `{"ab":1}`, `{"abcd":1}`},
		"uniqueItems":          {`{"type":"array","items":{"enum":["a","b",1]},"uniqueItems":true}`, `["a",1,"b"]`, `["a",1,"a"]`},
		"additionalItems":      {`{"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"string"}}`, `[1,"a"]`, `[1,2]`},
	}
	for _, k := range enforced {
		c, ok := cases[k]
		if !ok {
			t.Errorf("%s is on the allow-list as enforced, with no case here to show it", k)
			continue
		}
		if !accepts(t, c.schema, c.valid) {
			t.Errorf("%s: %s refuses %s", k, c.schema, c.valid)
		}
		if accepts(t, c.schema, c.invalid) {
			t.Errorf("%s: %s takes %s", k, c.schema, c.invalid)
		}
	}
}

// TestUnenforcedKeywordsRefused: a keyword that would change what is
// valid and is not enforced refuses the schema, naming it (the schemas
// behind the invalid replies the issue found, zip codes against a
// pattern, port 0 under minimum 1, an index over maximum, are enforced
// now: TestEveryKeywordEnforced), and so does an unknown one that looks
// like a known one misspelled; annotations, and other unknown keywords
// (vendors' extensions), are ignored, as JSON Schema says.
func TestUnenforcedKeywordsRefused(t *testing.T) {
	for _, c := range []struct{ schema, keyword string }{
		{`{"type":"object","properties":{"zipCode":{"type":"string","pattern":"(?<=x)[0-9]{5}"}}}`, "pattern"},
		{`{"type":"object","properties":{"a":{},"b":{}},"dependencies":{"a":{"required":["b"]}}}`, "dependencies"},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems"},
		{`{"type":"array","items":{"type":"string"},"uniqueItems":true}`, "uniqueItems"},
		{`{"type":"array","prefixItems":[{"const":1}],"items":{"const":1},"uniqueItems":true}`, "uniqueItems"},
		{`{"type":"object","additonalProperties":false}`, "additonalProperties"},
		{`{"type":"string","MinLength":3}`, "MinLength"},
		{`{"type":"object","properties":{"a":{}},"require":["a"]}`, "require"},
		{`{"type":"array","items":{},"minItem":2}`, "minItem"},
		{`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, "if"},
		{`{"type":"array","contains":{"type":"integer"}}`, "contains"},
		{`{"type":"array","prefixItems":[{}],"unevaluatedItems":false}`, "unevaluatedItems"},
		{`{"type":"string","format":"idn-hostname"}`, "format"},
		{`{"type":"string","maxLenght":3}`, "maxLenght"},
		{`{"not":{"minimum":3}}`, "not"},
		{`{"not":{"type":"integer"}}`, "not"},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/s","minimum":true}},"$defs":{"s":{"type":"integer"}}}`, "minimum"},
		{`{"type":"number","multipleOf":0.001234567}`, "multipleOf"},
		{`{"allOf":[{"type":"string","pattern":"b"},{"pattern":"a"}]}`, "pattern"},
		{`{"anyOf":[{"type":"string","format":"ipv6"},{"type":"null"}]}`, "format"},
		{`{"type":"object","patternProperties":{"(?=x)":{}}}`, "patternProperties"},
		{`{"allOf":[{"additionalProperties":false},{"patternProperties":{"^x":{}}}]}`, "patternProperties"},
		{`{"type":"object","propertyNames":{"minimum":3}}`, "minimum"},
		{`{"type":"object","properties":{"a":{}},"propertyNames":{"maxLength":3,"pattern":"(?=a)"},"additionalProperties":true}`, "pattern"},
		{`{"$defs":{"s":{"$id":"x","items":{"$ref":"#/$defs/t"}},"t":{}},"$ref":"#/$defs/s"}`, "$id"},
		{`{"type":"object","properties":{"a":{"id":{"type":"string"}}}}`, "id"},
		{`{"type":"string","nullable":true}`, "nullable"},
	} {
		err := New().Init(c.schema, llama(t).Vocab, nil)
		if err == nil || !strings.Contains(err.Error(), `"`+c.keyword+`"`) {
			t.Errorf("%s: %v; want it refused, naming %q", c.schema, err, c.keyword)
		}
	}
	for _, schema := range []string{
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x/s","title":"T","description":"D","type":"string","default":"a","examples":["b"],"$comment":"c","deprecated":false,"readOnly":true,"x-go-type":"string"}`,
		`{"type":"array","uniqueItems":false}`,
		`{"type":"object","self":{"vendor":"com.acme","name":"e","format":"jsonschema","version":"1-0-0"},"properties":{"a":{"type":"string","_format":"uri","esriDocumentation":"d","id":"#a"}}}`,
		`{"$defs":{"s":{"$id":"x","type":"string"}},"$ref":"#/$defs/s"}`,
	} {
		if err := New().Init(schema, llama(t).Vocab, nil); err != nil {
			t.Errorf("%s: %v; annotations and unknown keywords that are not misspellings change nothing", schema, err)
		}
	}
	if slices.Contains(annotations, "format") {
		t.Error("format is an assertion for many validators: it must be enforced or refused, not ignored")
	}
}

// TestNotOfTypes: not of a schema that says only which types it takes
// ({} and true take all, a not inside takes its own away) takes those
// types away; a property whose schema is not {} cannot come.
func TestNotOfTypes(t *testing.T) {
	for _, c := range []struct{ schema, valid, invalid string }{
		{`{"type":"object","properties":{"foo":{"not":{}},"bar":{}}}`, `{"bar":1}`, `{"foo":1}`},
		{`{"type":"object","properties":{"foo":{"not":true}},"additionalProperties":true}`, `{"x":1}`, `{"foo":null}`},
		{`{"not":{"not":{"type":"string"}}}`, `"s"`, `1`},
		{`{"type":["string","boolean"],"not":{"type":"string","description":"d"}}`, `true`, `"s"`},
		{`{"not":{"not":{}}}`, `[1]`, `[`},
	} {
		if !accepts(t, c.schema, c.valid) {
			t.Errorf("%s refuses %s", c.schema, c.valid)
		}
		if accepts(t, c.schema, c.invalid) {
			t.Errorf("%s takes %s", c.schema, c.invalid)
		}
	}
	for _, schema := range []string{`{"not":{"not":{"type":"integer"}}}`, `{"not":{"type":"string","minLength":2}}`} {
		if _, err := newGrammar().compileSchema(schema); err == nil || !strings.Contains(err.Error(), `"not"`) {
			t.Errorf("%s: %v; want it refused, naming not", schema, err)
		}
	}
}

// TestCompileBounds: a schema nested deeper than the compiler goes is
// refused with one error, not a crash (a recursive schema expanded
// through allOf without end overflowed the stack: a CWL schema of
// JSONSchemaBench did).
func TestCompileBounds(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, maxNesting+10) + `{}` + strings.Repeat(`}}`, maxNesting+10)
	if _, err := newGrammar().compileSchema(deep); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("a schema %d levels deep: %v; want it refused as nested too deep", maxNesting+10, err)
	}
}

// TestNotRequired: not of required properties (and allOf, anyOf of
// such) forbids their sets all present: no key comes that would
// complete one, with what it then needs; a value that is not an object
// passes the test, so not refuses it, unless the test says "object".
func TestNotRequired(t *testing.T) {
	checkCases(t, []coverageCase{
		{"both", `{"type":"object","properties":{"a":{},"b":{}},"not":{"required":["a","b"]}}`,
			[]string{`{}`, `{"a":1}`, `{"b":2}`}, []string{`{"a":1,"b":2}`, `{"b":2,"a":1}`}},
		{"either", `{"properties":{"a":{},"b":{},"c":{}},"not":{"anyOf":[{"required":["a"]},{"required":["b"]}]}}`,
			[]string{`{"c":1}`, `{}`}, []string{`{"a":1}`, `{"c":1,"b":2}`, `1`, `"s"`}},
		{"objects only", `{"not":{"type":"object","required":["a"]}}`,
			[]string{`1`, `{"b":1}`, `[]`}, []string{`{"a":1}`}},
		{"with required", `{"type":"object","properties":{"a":{},"b":{}},"required":["a"],"not":{"required":["b"]}}`,
			[]string{`{"a":1}`}, []string{`{"a":1,"b":2}`, `{"b":2,"a":1}`}},
		{"with dependencies", `{"type":"object","properties":{"a":{},"c":{},"d":{}},"dependentRequired":{"a":["c"]},"not":{"allOf":[{"required":["a"]},{"required":["c"]}]}}`,
			[]string{`{"c":1,"d":2}`}, []string{`{"a":1,"c":2}`, `{"a":1}`}},
	})
	if takes(t, `{"type":"object","properties":{"a":{},"b":{}},"required":["a"],"not":{"required":["b"]}}`, `{"b`) {
		t.Error(`{"b is taken, though b with the required a completes the forbidden set`)
	}
	for schema, want := range map[string]string{
		`{"type":"object","required":["a","b"],"not":{"required":["a","b"]}}`:                                   "no value is valid",
		`{"type":"object","properties":{"a":{}},"minProperties":1,"not":{"required":["a"]}}`:                    "minProperties beside not",
		`{"type":"object","properties":{"a":{}},"not":{"required":["a"],"properties":{"a":{"type":"string"}}}}`: `"not"`,
	} {
		if _, err := newGrammar().compileSchema(schema); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it refused, saying %q", schema, err, want)
		}
	}
}

// TestRequiredAlternatives: an anyOf of required properties needs one
// of its sets present at the end, a oneOf exactly one branch passing
// (and refuses values that are not objects); no key comes after which
// no set can be completed.
func TestRequiredAlternatives(t *testing.T) {
	checkCases(t, []coverageCase{
		{"anyOf", `{"type":"object","properties":{"a":{},"b":{},"c":{}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			[]string{`{"a":1}`, `{"b":1}`, `{"a":1,"b":2}`, `{"c":1,"b":2}`}, []string{`{}`, `{"c":1}`}},
		{"oneOf", `{"properties":{"a":{},"b":{},"c":{}},"oneOf":[{"required":["a"]},{"required":["b","c"]}]}`,
			[]string{`{"a":1}`, `{"b":1,"c":2}`, `{"a":1,"b":2}`}, []string{`{}`, `{"a":1,"b":2,"c":3}`, `{"b":1}`, `1`}},
		{"anyOf of non-objects", `{"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			[]string{`1`, `"s"`, `{"a":1}`}, []string{`{}`, `{"c":1}`}},
		{"with maxProperties", `{"type":"object","properties":{"a":{},"b":{},"c":{}},"maxProperties":2,"anyOf":[{"required":["a","b"]},{"required":["c"]}]}`,
			[]string{`{"a":1,"b":2}`, `{"c":1}`}, []string{`{"a":1,"c":2,"b":3}`}},
	})
	// No key comes after which no set can be completed: under
	// maxProperties 1, a key that is no set's leaves none.
	if takes(t, `{"type":"object","properties":{"a":{},"b":{},"c":{}},"maxProperties":1,"anyOf":[{"required":["a"]},{"required":["b"]}]}`, `{"c`) {
		t.Error(`{"c is taken, after which neither a nor b can come`)
	}
	if _, err := newGrammar().compileSchema(`{"type":"object","required":["a","b"],"oneOf":[{"required":["a"]},{"required":["b"]}]}`); err == nil || !strings.Contains(err.Error(), "no value is valid") {
		t.Errorf("both branches required: %v; want no value valid", err)
	}
}
