package json

import (
	"strings"
	"testing"
)

// cases lists, for each schema, instances it must take and instances it
// must refuse, checked byte by byte through the grammar as the masks see
// it.
type coverageCase struct {
	name, schema   string
	valid, invalid []string
}

func checkCases(t *testing.T, cases []coverageCase) {
	t.Helper()
	for _, c := range cases {
		for _, v := range c.valid {
			if !accepts(t, c.schema, v) {
				t.Errorf("%s: %s refuses %s", c.name, c.schema, v)
			}
		}
		for _, v := range c.invalid {
			if accepts(t, c.schema, v) {
				t.Errorf("%s: %s takes %s", c.name, c.schema, v)
			}
		}
	}
}

func TestRefs(t *testing.T) {
	checkCases(t, []coverageCase{
		{"escaped slash", `{"properties":{"a/b":{"type":"string"},"c":{"$ref":"#/properties/a~1b"}}}`,
			[]string{`{"c":"x"}`, `{"a/b":"y","c":"x"}`}, []string{`{"c":1}`}},
		{"escaped tilde", `{"$defs":{"t~x":{"type":"null"}},"$ref":"#/$defs/t~0x"}`, []string{`null`}, []string{`0`, `"t~x"`}},
		{"percent-encoded", `{"$defs":{"a b":{"type":"boolean"}},"$ref":"#/$defs/a%20b"}`, []string{`true`}, []string{`0`}},
		{"nested definitions", `{"$defs":{"outer":{"$defs":{"inner":{"type":"integer"}}}},"$ref":"#/$defs/outer/$defs/inner"}`,
			[]string{`12`}, []string{`1.5`, `"12"`}},
		{"ref to a ref", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"boolean"}},"type":"array","items":{"$ref":"#/$defs/a"}}`,
			[]string{`[true,false]`}, []string{`[1]`}},
		{"through an array", `{"x-list":[{"type":"null"},{"type":"string"}],"$ref":"#/x-list/1"}`, []string{`"s"`}, []string{`null`}},
		{"recursive", `{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}},"required":["v"]}`,
			[]string{`{"v":1,"next":{"v":2}}`}, []string{`{"v":1,"next":{}}`, `{"next":{"v":2}}`}},
	})
}

func TestLimits(t *testing.T) {
	long := `"` + strings.Repeat("é", 40000) + `"`
	checkCases(t, []coverageCase{
		{"long maxLength", `{"type":"string","maxLength":40000}`, []string{long, `""`}, []string{`"` + strings.Repeat("a", 40001) + `"`}},
		{"huge maxLength", `{"type":"string","maxLength":1e12,"minLength":40000}`, []string{long}, []string{`"a"`}},
		{"integral float bound", `{"type":"array","maxItems":2.0}`, []string{`[1,2]`}, []string{`[1,2,3]`}},
		{"optional property, enum of another type", `{"type":"object","properties":{"a":{"type":"string","enum":[1,2]},"b":{"type":"integer"}}}`,
			[]string{`{}`, `{"b":1}`}, []string{`{"a":1}`, `{"a":"1"}`}},
		{"false property", `{"type":"object","properties":{"a":false,"b":{}}}`, []string{`{"b":1}`}, []string{`{"a":1}`}},
		{"enum against the rest of the schema", `{"type":["string","integer"],"enum":["abcdef","ab",3],"maxLength":2}`, []string{`"ab"`, `3`}, []string{`"abcdef"`}},
		{"const and enum", `{"const":1,"enum":[1.0,2]}`, []string{`1`}, []string{`2`}},
		{"const outside enum", `{"type":"object","properties":{"a":{"const":1,"enum":[2]}}}`, []string{`{}`}, []string{`{"a":1}`, `{"a":2}`}},
	})
}

func TestCanonNum(t *testing.T) {
	for _, c := range [][2]string{{"1", "1.0"}, {"10e-1", "1"}, {"-0.50", "-5e-1"}, {"0", "-0.0"}, {"1200", "12E2"}} {
		if canonNum(c[0]) != canonNum(c[1]) {
			t.Errorf("%s and %s differ: %s, %s", c[0], c[1], canonNum(c[0]), canonNum(c[1]))
		}
	}
	for _, c := range [][2]string{{"1", "10"}, {"1", "-1"}, {"0.1", "1"}} {
		if canonNum(c[0]) == canonNum(c[1]) {
			t.Errorf("%s and %s equal: %s", c[0], c[1], canonNum(c[0]))
		}
	}
}
