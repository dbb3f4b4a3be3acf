package json

import (
	stdjson "encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
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

func TestAllOf(t *testing.T) {
	checkCases(t, []coverageCase{
		{"types intersect", `{"allOf":[{"type":["integer","string"]},{"type":["number","null"]}]}`, []string{`3`}, []string{`3.5`, `"a"`, `null`}},
		{"bounds", `{"allOf":[{"type":"string","minLength":2,"maxLength":9},{"maxLength":3}]}`, []string{`"ab"`, `"abc"`}, []string{`"a"`, `"abcd"`}},
		{"properties and required", `{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`,
			[]string{`{"a":1,"b":"x"}`, `{"b":"x","a":1}`}, []string{`{"a":1}`, `{"b":"x"}`, `{"a":1,"b":"x","c":0}`, `{"a":"1","b":"x"}`}},
		{"the same property in both", `{"allOf":[{"properties":{"a":{"type":"number"}}},{"properties":{"a":{"type":"integer","enum":[1,2,3.5]}}}]}`,
			[]string{`{"a":1}`, `{}`}, []string{`{"a":3.5}`, `{"a":4}`}},
		{"additionalProperties false beside", `{"allOf":[{"properties":{"a":{}},"additionalProperties":false},{"properties":{"b":{}}}]}`,
			[]string{`{"a":1}`}, []string{`{"b":1}`}},
		{"additionalProperties schema", `{"allOf":[{"type":"object","additionalProperties":{"type":"integer"}},{"properties":{"a":{}}}]}`,
			[]string{`{"a":1,"z":2}`}, []string{`{"a":"x"}`, `{"z":"x"}`}},
		{"enums intersect", `{"allOf":[{"enum":[1,2,3]},{"enum":[2,3,4]},{"const":3}]}`, []string{`3`}, []string{`2`, `1`, `4`}},
		{"items", `{"allOf":[{"type":"array","items":{"type":"integer"},"maxItems":3},{"items":{"enum":[1,2]},"minItems":1}]}`,
			[]string{`[1]`, `[2,1,1]`}, []string{`[]`, `[3]`, `[1,1,1,1]`}},
		{"$ref beside keywords", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s","maxLength":2}},"$defs":{"s":{"type":"string"}}}`,
			[]string{`{"a":"xy"}`}, []string{`{"a":"xyz"}`, `{"a":1}`}},
		{"base and extension", `{"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},
			"allOf":[{"$ref":"#/$defs/base"},{"properties":{"name":{"type":"string"}}}]}`,
			[]string{`{"id":1,"name":"n"}`, `{"id":2}`}, []string{`{"name":"n"}`, `{"id":1,"other":0}`}},
		{"true and false", `{"type":"object","properties":{"a":{"allOf":[true,{"type":"null"}]},"b":{"allOf":[false,{}]}}}`,
			[]string{`{"a":null}`}, []string{`{"b":1}`, `{"a":1}`}},
	})
}

func TestAnyOf(t *testing.T) {
	checkCases(t, []coverageCase{
		{"nullable", `{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}}},{"type":"null"}]}`,
			[]string{`null`, `{"a":1}`}, []string{`{"a":"x"}`, `1`}},
		{"types", `{"anyOf":[{"type":"string","maxLength":2},{"type":"array","items":{"type":"string"}}]}`,
			[]string{`"ab"`, `["abc"]`}, []string{`"abc"`, `[1]`, `1`}},
		{"integer or number", `{"anyOf":[{"type":"integer"},{"type":"number"}]}`, []string{`1`, `1.5`}, []string{`"1"`}},
		{"string lengths that join", `{"anyOf":[{"type":"string","maxLength":2},{"type":"string","minLength":3,"maxLength":4}]}`,
			[]string{`""`, `"abcd"`}, []string{`"abcde"`}},
		{"enums", `{"anyOf":[{"enum":["a","b"]},{"const":"c"},{"enum":[1]}]}`, []string{`"a"`, `"c"`, `1`}, []string{`"d"`, `2`}},
		{"enum inside a general branch", `{"anyOf":[{"const":"x"},{"type":"string"}]}`, []string{`"x"`, `"y"`}, []string{`1`}},
		{"discriminated", `{"anyOf":[
			{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"]},
			{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"number"}},"required":["kind","side"]}]}`,
			[]string{`{"kind":"circle","r":1}`, `{"kind":"square","side":2}`},
			[]string{`{"kind":"circle","side":1}`, `{"kind":"square"}`, `{"kind":"oval","r":1}`, `{"r":1}`}},
		{"siblings distributed", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"t":{"enum":["a","b"]}},
			"anyOf":[{"properties":{"t":{"const":"a"}},"required":["t","a"]},{"properties":{"t":{"const":"b"}},"required":["t","b"]}]}`,
			[]string{`{"t":"a","a":1}`, `{"t":"b","b":1,"a":2}`}, []string{`{"t":"a","b":1}`, `{"t":"b"}`, `{"a":1}`}},
		{"recursive", `{"$defs":{"tree":{"anyOf":[{"type":"integer"},{"type":"array","items":{"$ref":"#/$defs/tree"},"maxItems":2}]}},"$ref":"#/$defs/tree"}`,
			[]string{`1`, `[1,[2,[]]]`}, []string{`[1,2,3]`, `["x"]`}},
		{"any", `{"anyOf":[{"type":"string"},true]}`, []string{`1`, `"x"`, `{}`}, nil},
		{"false branch", `{"anyOf":[false,{"type":"null"}]}`, []string{`null`}, []string{`1`}},
		{"nested", `{"anyOf":[{"anyOf":[{"type":"null"},{"type":"boolean"}]},{"type":"integer"}]}`, []string{`null`, `true`, `3`}, []string{`"x"`}},
	})
}

func TestOneOf(t *testing.T) {
	checkCases(t, []coverageCase{
		{"types", `{"oneOf":[{"type":"string"},{"type":"null"},{"type":"object","properties":{"a":{}}}]}`,
			[]string{`"s"`, `null`, `{"a":1}`}, []string{`1`}},
		{"enums, a shared value left out", `{"oneOf":[{"enum":[1,2]},{"enum":[2.0,3]}]}`, []string{`1`, `3`}, []string{`2`, `2.0`}},
		{"discriminated", `{"oneOf":[
			{"type":"object","properties":{"type":{"const":"a"},"x":{"type":"integer"}},"required":["type"]},
			{"type":"object","properties":{"type":{"enum":["b","c"]},"y":{"type":"string"}},"required":["type","y"]}]}`,
			[]string{`{"type":"a","x":1}`, `{"type":"c","y":"s"}`, `{"type":"a"}`},
			[]string{`{"type":"b"}`, `{"x":1}`, `{"type":"a","y":"s"}`, `{"y":"s","type":"b"}`}},
		{"discriminated through refs", `{"$defs":{"cat":{"type":"object","properties":{"pet":{"const":"cat"},"meows":{"type":"boolean"}},"required":["pet"]},
			"dog":{"type":"object","properties":{"pet":{"const":"dog"},"barks":{"type":"boolean"}},"required":["pet"]}},
			"type":"array","items":{"oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"},{"type":"null"}]}}`,
			[]string{`[{"pet":"cat","meows":true},null,{"pet":"dog"}]`}, []string{`[{"pet":"cat","barks":true}]`, `[{"pet":"cow"}]`}},
	})
}

// TestCombinationsRefused: what the controller cannot enforce exactly
// is refused, saying why.
func TestCombinationsRefused(t *testing.T) {
	for _, c := range []struct{ schema, says string }{
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, "cannot tell them apart"},
		{`{"oneOf":[{"properties":{"a":{}}},{"type":"string"}]}`, "give each branch"},
		{`{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}`, "cannot tell them apart"},
		{`{"oneOf":[{"type":"object","properties":{"k":{"const":1}}},{"type":"object","properties":{"k":{"enum":[1,2]}}}]}`, "distinct"},
		{`{"anyOf":[{"type":"object","properties":{"a":{}},"required":["a"]},{"type":"object","properties":{"b":{}},"required":["b"]}]}`, "told apart"},
		{`{"anyOf":[{"type":"string","maxLength":1},{"type":"string","minLength":5}]}`, "gap"},
		{`{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"array","items":{"type":"integer"}}]}`, "different items"},
		{`{"anyOf":[{"const":"long value"},{"type":"string","maxLength":3}]}`, "cannot be combined"},
		{`{"$defs":{"a":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "leads back"},
		{`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "cycle"},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, "no value"},
		{`{"anyOf":[]}`, "non-empty"},
	} {
		g := newGrammar()
		_, err := g.compileSchema(c.schema)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want it refused, saying %q", c.schema, err, c.says)
		}
	}
}

func TestPattern(t *testing.T) {
	checkCases(t, []coverageCase{
		{"zip code", `{"type":"string","pattern":"^[0-9]{5}(-[0-9]{4})?$"}`,
			[]string{`"12345"`, `"12345-6789"`}, []string{`"illill week"`, `"1234"`, `"12345-"`, `"123456"`, `" 12345"`, `"12345\n"`}},
		{"unanchored: a search", `{"type":"string","pattern":"ab+c"}`,
			[]string{`"abc"`, `"xxabbbcyy"`, `"a\nabc\n"`}, []string{`"ac"`, `""`, `"abx"`}},
		{"escapes decoded", `{"type":"string","pattern":"^a\\nb\"c\\\\d/é$"}`,
			[]string{`"a\nb\"c\\d/é"`, `"a\u000Ab\"c\\d\/é"`},
			[]string{`"anb\"c\\d/é"`, `"a\nb\"c\\d/e"`, `"a\\nb\"c\\d/é"`, `"a\u000ab\u0022c\u005cd\/\u00e9"`}}, // \u only for control characters
		{"control escapes", `{"type":"string","pattern":"^\\x01\\x1f$"}`, []string{`"\u0001\u001F"`}, []string{`"\u0001"`, `"\u0001\u001e"`}},
		{"surrogates refused", `{"type":"string","pattern":"^.$"}`, []string{`"😀"`, `"a"`, `"é"`}, []string{`"\ud83d\ude00"`, `"\u00e9"`, `"ab"`, `""`, `"\n"`, `"\r"`, `"\u2028"`}},
		{"ECMA \\s", `{"type":"string","pattern":"^\\s$"}`, []string{`" "`, "\"\u00a0\"", `"\t"`, `"\u0009"`, "\"\u2003\""}, []string{`"a"`, `""`, `"\u00a0"`, "\"\ufeff\""}},
		{"ECMA \\S", `{"type":"string","pattern":"^\\S+$"}`, []string{`"ab"`}, []string{`"a b"`, `"a\u00a0b"`, "\"a\u3000b\""}},
		{"categories", `{"type":"string","pattern":"^\\p{Letter}\\p{Nd}\\P{gc=L}$"}`, []string{`"é1-"`}, []string{`"11-"`, `"é1a"`}},
		{"dialects", `{"type":"string","pattern":"^\\w\\d[^\\w]\\W\\D$"}`, []string{`"a1-.."`}, []string{`"é1-.."`, `"a١-.."`, `"a1é.."`, `"a1-é."`, `"a1-.١"`}},
		{"class", `{"type":"string","pattern":"^[^a-c\\d]*[.\\]]$"}`, []string{`"xyz."`, `"]"`, `"\n]"`}, []string{`"a."`, `"1]"`, `"x"`}},
		{"literal braces", `{"type":"string","pattern":"^a{x}}$"}`, []string{`"a{x}}"`}, []string{`"a"`}},
		{"quantifiers", `{"type":"string","pattern":"^a{2}b{1,}c{0,1}$"}`, []string{`"aab"`, `"aabbbc"`}, []string{`"ab"`, `"aabcc"`}},
		{"with lengths", `{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":3}`, []string{`"ab"`, `"abc"`}, []string{`"a"`, `"abcd"`, `"a1"`}},
		{"property", `{"type":"object","properties":{"zipCode":{"type":"string","pattern":"^[0-9]{5}(-[0-9]{4})?$"}}}`,
			[]string{`{"zipCode":"12345"}`, `{}`}, []string{`{"zipCode":"illill week"}`}},
		{"enum against the pattern", `{"enum":["ab","cd",3],"pattern":"^a"}`, []string{`"ab"`}, []string{`"cd"`, `3`}},
		{"allOf, the same pattern twice", `{"allOf":[{"type":"string","pattern":"^a"},{"pattern":"^a","maxLength":2}]}`, []string{`"ab"`}, []string{`"abc"`, `"b"`}},
		{"anyOf, pattern and null", `{"anyOf":[{"type":"string","pattern":"^a"},{"type":"null"}]}`, []string{`"ab"`, `null`}, []string{`"b"`}},
	})
}

func TestFormat(t *testing.T) {
	checkCases(t, []coverageCase{
		{"date", `{"type":"string","format":"date"}`, []string{`"2024-01-31"`, `"1999-11-30"`, `"2023-02-28"`},
			[]string{`"2024-1-31"`, `"2024-02-30"`, `"2024-04-31"`, `"2024-13-01"`, `"2024-01-31x"`, `"x2024-01-31"`, `"2024-02-29"`}},
		{"time", `{"type":"string","format":"time"}`, []string{`"23:59:59Z"`, `"08:30:00.123+02:00"`, `"00:00:00-11:30"`},
			[]string{`"24:00:00Z"`, `"12:00:00"`, `"12:60:00Z"`, `"12:00:00+2:00"`}},
		{"date-time", `{"type":"string","format":"date-time"}`, []string{`"2024-06-01T12:00:00Z"`},
			[]string{`"2024-06-01 12:00:00Z"`, `"2024-06-01T12:00:00"`}},
		{"uuid", `{"type":"string","format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`, `"123E4567-E89B-12D3-A456-426614174000"`},
			[]string{`"123e4567e89b12d3a456426614174000"`, `"123e4567-e89b-12d3-a456-42661417400g"`}},
		{"ipv4", `{"type":"string","format":"ipv4"}`, []string{`"192.168.0.1"`, `"0.0.0.0"`, `"255.255.255.255"`},
			[]string{`"256.1.1.1"`, `"01.1.1.1"`, `"1.1.1"`, `"1.1.1.1.1"`}},
		{"email", `{"type":"string","format":"email"}`, []string{`"joe.bloggs@example.com"`, `"a+b@x.co.uk"`},
			[]string{`"joe"`, `"@example.com"`, `"joe@example"`, `"joe..b@example.com"`, `".joe@example.com"`, `"joe@-x.com"`, `"\"j\"@example.com"`}},
	})
}

func TestPatternRefused(t *testing.T) {
	for _, c := range []struct{ schema, says string }{
		{`{"type":"string","format":"ipv6"}`, `"format" "ipv6"`},
		{`{"type":"string","format":"iri"}`, `"format" "iri"`},
		{`{"type":"string","pattern":"(?=a)b"}`, "lookarounds"},
		{`{"type":"string","pattern":"(a)\\1"}`, `\1`},
		{`{"type":"string","pattern":"(?i)a"}`, "flags"},
		{`{"type":"string","pattern":"\\Aa"}`, `\A`},
		{`{"type":"string","pattern":"\\p{Greek}"}`, "only general categories"},
		{`{"type":"string","pattern":"[\\S]"}`, `\S in a class`},
		{`{"type":"string","pattern":"\\bcat"}`, `word boundaries`},
		{`{"type":"string","pattern":"[]"}`, "empty class"},
		{`{"type":"string","pattern":"\\ud83d\\ude00"}`, "surrogate"},
		{`{"type":"string","pattern":"a{2,1}"}`, "pattern"},
		{`{"type":"string","pattern":"^a{,3}$"}`, "{,n}"},
		{`{"allOf":[{"pattern":"a"},{"pattern":"b"}]}`, "two different"},
		{`{"anyOf":[{"type":"string","pattern":"a"},{"type":"string","maxLength":2}]}`, "pattern or format"},
		{`{"type":"string","pattern":"a","format":"date"}`, "beside"},
	} {
		g := newGrammar()
		_, err := g.compileSchema(c.schema)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want it refused, saying %q", c.schema, err, c.says)
		}
	}
}

func TestBounds(t *testing.T) {
	checkCases(t, []coverageCase{
		{"port", `{"type":"object","properties":{"port":{"type":"integer","minimum":1,"maximum":65535}}}`,
			[]string{`{"port":1}`, `{"port":65535}`, `{"port":8080}`}, []string{`{"port":0}`, `{"port":65536}`, `{"port":-1}`, `{"port":100000}`, `{"port":1.5}`}},
		{"int32 index", `{"type":"integer","maximum":2147483647}`, []string{`2147483647`, `0`, `-99999999999999999`}, []string{`77777777777`, `2147483648`, `3000000000`}},
		{"exclusive", `{"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":10}`, []string{`-2`, `9`, `0`, `-0`}, []string{`-3`, `10`, `-4`, `11`}},
		{"negative range", `{"type":"integer","minimum":-120,"maximum":-7}`, []string{`-120`, `-7`, `-99`, `-100`}, []string{`-6`, `-121`, `0`, `7`, `-1000`}},
		{"fractional bounds on integers", `{"type":"integer","minimum":1.5,"maximum":3.5}`, []string{`2`, `3`}, []string{`1`, `4`}},
		{"numbers", `{"type":"number","minimum":0,"maximum":1}`, []string{`0`, `1`, `0.5`, `0.999`, `1.000`, `-0`, `-0.0`}, []string{`1.001`, `-0.1`, `2`, `10`, `1e0`, `0.5e-1`}},
		{"exclusive numbers", `{"type":"number","exclusiveMinimum":0.25,"exclusiveMaximum":12.5}`, []string{`0.26`, `0.2500001`, `12.49`, `3`}, []string{`0.25`, `0.250`, `12.5`, `12.50`, `0.2`, `13`}},
		{"negative fractions", `{"type":"number","minimum":-1.5,"maximum":-0.25}`, []string{`-1.5`, `-0.25`, `-1`, `-0.3`}, []string{`-1.51`, `-0.2`, `0`, `-2`}},
		{"big bounds", `{"type":"integer","minimum":1e3,"maximum":1e30}`, []string{`1000`, `99999999999999999999`}, []string{`999`, `-5`}},
		{"minimum only", `{"minimum":5}`, []string{`5`, `5.5`, `100`}, []string{`4.99`, `"x"`}},
		{"multipleOf", `{"type":"integer","multipleOf":7,"minimum":10,"maximum":30}`, []string{`14`, `28`, `21`}, []string{`7`, `35`, `15`, `0`}},
		{"multipleOf on numbers", `{"type":"number","multipleOf":3}`, []string{`3`, `-9`, `0`}, []string{`4`, `3.0`, `1.5`}},
		{"multipleOf a fraction", `{"type":"number","multipleOf":0.25,"maximum":1}`, []string{`0.25`, `0.5`, `1`, `0.75`, `-2.5`}, []string{`0.3`, `0.125`, `1.25`}},
		{"a tiny multipleOf on integers", `{"type":"integer","multipleOf":1e-8}`, []string{`12`, `-3`}, []string{`1.5`}},
		{"allOf keeps the tighter", `{"allOf":[{"type":"integer","minimum":1,"maximum":10},{"minimum":3,"exclusiveMaximum":10}]}`, []string{`3`, `9`}, []string{`2`, `10`}},
		{"enum against bounds", `{"enum":[1,5,9,"a"],"minimum":2,"maximum":8}`, []string{`5`}, []string{`1`, `9`, `"a"`}}, // "minimum" without a type: numbers
		{"a property out of range cannot come", `{"type":"object","properties":{"a":{"type":"integer","minimum":5,"maximum":3},"b":{}}}`, []string{`{"b":1}`}, []string{`{"a":4}`}},
		{"anyOf with null", `{"anyOf":[{"type":"integer","minimum":1},{"type":"null"}]}`, []string{`1`, `null`}, []string{`0`}},
	})
	for _, c := range []struct{ schema, says string }{
		{`{"type":"integer","minimum":5,"maximum":3}`, "no value"},
		{`{"type":"number","exclusiveMinimum":true}`, "boolean form"},
		{`{"type":"number","multipleOf":0.3333333}`, "multipleOf"},
		{`{"anyOf":[{"type":"integer","minimum":5},{"type":"number","maximum":0}]}`, "bounds or multipleOf"},
		{`{"allOf":[{"multipleOf":2},{"multipleOf":3}]}`, "multipleOf"},
	} {
		g := newGrammar()
		_, err := g.compileSchema(c.schema)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want it refused, saying %q", c.schema, err, c.says)
		}
	}
}

// TestBoundsExact compares the bounded number automaton with exact
// rational arithmetic on every integer of up to three digits, and on
// numbers of one and two fraction digits around the bounds, for bounds
// of several shapes.
func TestBoundsExact(t *testing.T) {
	var texts []string
	for i := -999; i <= 999; i++ {
		texts = append(texts, strconv.Itoa(i))
		if i < -130 && i%7 != 0 || i > 130 && i%11 != 0 {
			continue
		}
		for f := range 100 {
			texts = append(texts, fmt.Sprintf("%s.%d", strconv.Itoa(i), f), fmt.Sprintf("%s.%02d", strconv.Itoa(i), f))
		}
	}
	texts = append(texts, "-0", "-0.5", "-0.05", "0.05")
	for _, kw := range []string{
		`"minimum":-12.5,"maximum":99.99`, `"exclusiveMinimum":0,"exclusiveMaximum":1`, `"minimum":-0.01`,
		`"maximum":-100`, `"exclusiveMaximum":5e1`, `"minimum":7,"multipleOf":0.5`, `"multipleOf":12,"exclusiveMinimum":-50`,
		`"minimum":0.3,"exclusiveMaximum":0.31`,
	} {
		for _, ty := range []string{"integer", "number"} {
			schema := `{"type":"` + ty + `",` + kw + `}`
			var m map[string]any
			dec := stdjson.NewDecoder(strings.NewReader(schema))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			g := newGrammar()
			root, err := g.compileSchema(schema)
			if err != nil {
				if ty != "integer" || !strings.Contains(err.Error(), "no value") {
					t.Fatalf("%s: %v", schema, err)
				}
				for i := -999; i <= 999; i++ {
					if inRange(m, strconv.Itoa(i)) {
						t.Errorf("%s: refused, yet %d is valid", schema, i)
					}
				}
				continue
			}
			for _, text := range texts {
				want := inRange(m, text)
				if strings.Contains(text, ".") && (ty == "integer" || m["multipleOf"] != nil && !strings.Contains(fmt.Sprint(m["multipleOf"]), ".")) {
					want = false // integers are written without a fraction
				}
				if _, frac, ok := strings.Cut(text, "."); ok && strings.Contains(kw, "0.5") && len(frac) > 1 {
					want = false // no more fraction digits than multipleOf's
				}
				if got := g.acceptsFrom(root, []byte(text)); got != want {
					t.Errorf("%s: %s: got %v, want %v", schema, text, got, want)
				}
			}
		}
	}
}

func inRange(m map[string]any, text string) bool {
	v, _ := new(big.Rat).SetString(text)
	r := func(k string) *big.Rat {
		n, ok := m[k].(stdjson.Number)
		if !ok {
			return nil
		}
		x, _ := new(big.Rat).SetString(string(n))
		return x
	}
	if b := r("minimum"); b != nil && v.Cmp(b) < 0 {
		return false
	}
	if b := r("maximum"); b != nil && v.Cmp(b) > 0 {
		return false
	}
	if b := r("exclusiveMinimum"); b != nil && v.Cmp(b) <= 0 {
		return false
	}
	if b := r("exclusiveMaximum"); b != nil && v.Cmp(b) >= 0 {
		return false
	}
	if b := r("multipleOf"); b != nil && !new(big.Rat).Quo(v, b).IsInt() {
		return false
	}
	return true
}

// wideSchema returns an object schema of n properties p0…p(n-1): every
// seventh required, every tenth an object of two properties whose "x" is
// required (recursively the same schema at p5), the others integers.
func wideSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		switch {
		case i == 5:
			fmt.Fprintf(&b, `"p%d":{"$ref":"#"}`, i)
		case i%10 == 0:
			fmt.Fprintf(&b, `"p%d":{"type":"object","properties":{"x":{"type":"integer"},"y":{}},"required":["x"]}`, i)
		default:
			fmt.Fprintf(&b, `"p%d":{"type":"integer"}`, i)
		}
		if i%7 == 3 {
			req = append(req, fmt.Sprintf(`"p%d"`, i))
		}
	}
	fmt.Fprintf(&b, `},"required":[%s]}`, strings.Join(req, ","))
	return b.String()
}

func TestWideObjects(t *testing.T) {
	// Discriminated branches of 81 properties: the chosen branch's frame
	// starts with the discriminator, bit 80 (names sort "a0"… "kind"), in
	// its interned set.
	branch := func(kind string) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"type":"object","properties":{"kind":{"const":%q}`, kind)
		for i := range 80 {
			fmt.Fprintf(&b, `,"%s%d":{"type":"integer"}`, kind, i)
		}
		fmt.Fprintf(&b, `},"required":["kind","%s79"]}`, kind)
		return b.String()
	}
	checkCases(t, []coverageCase{{"discriminated wide", `{"oneOf":[` + branch("a") + `,` + branch("z") + `]}`,
		[]string{`{"kind":"a","a79":1}`, `{"kind":"z","z0":2,"z79":1}`},
		[]string{`{"kind":"a","z79":1}`, `{"kind":"a","a79":1,"kind":"a"}`, `{"kind":"z"}`, `{"kind":"a","a79":1,"a79":2}`}}})

	for _, n := range []int{64, 65, 130, 300} {
		schema := wideSchema(n)
		var required, all []string
		for i := range n {
			v := "1"
			if i%10 == 0 {
				v = `{"x":2}`
			}
			if i == 5 {
				continue // recursive: left out
			}
			kv := fmt.Sprintf(`"p%d":%s`, i, v)
			all = append(all, kv)
			if i%7 == 3 {
				required = append(required, kv)
			}
		}
		obj := func(kvs []string) string { return "{" + strings.Join(kvs, ",") + "}" }
		rev := slices.Clone(required)
		slices.Reverse(rev)
		last := len(required) - 1
		checkCases(t, []coverageCase{{fmt.Sprintf("%d properties", n), schema,
			[]string{obj(required), obj(rev), obj(all), obj(append([]string{`"p0":{"x":1,"y":[]}`}, required...))},
			[]string{
				obj(required[:last]),                           // the last required one missing
				obj(append(slices.Clone(required), `"p3":1`)),  // p3 twice
				obj(append(slices.Clone(required), `"zz":1`)),  // undeclared
				obj(append(slices.Clone(required), `"p0":{}`)), // p0 without its x
				obj(append(slices.Clone(required), fmt.Sprintf(`"p%d":"s"`, n-1))),
				obj(append(slices.Clone(required), `"p5":{}`)), // the recursive one without its required
				"{}",
			}}})
	}
}
