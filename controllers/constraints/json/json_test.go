package json

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

func llama(tb testing.TB) *sdktest.Llama3 {
	tb.Helper()
	l, err := sdktest.LoadLlama3()
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// schemas are the tests' schemas, with the probability of sampling the
// end-of-turn token where it is allowed (for values that may end with
// it) and whether strings are unbounded, so that every reply should be
// steered towards closing them.
var schemas = []struct {
	name, schema string
	endBias      float64
	open         bool
}{
	{"any", ``, 0.3, true},
	{"object", `{"type":"object"}`, 0, true},
	{"person", `{"type":"object","properties":{
		"name":{"type":"string","maxLength":20},
		"age":{"type":"integer"},
		"email":{"type":"string","maxLength":30},
		"tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":3}},
		"required":["name","age"]}`, 0, false},
	{"numbers", `{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":4}`, 0, false},
	{"enum", `{"enum":["red","green","blue",1,12,null,{"a":[1,2]}]}`, 0.3, false},
	{"boolean", `{"type":"boolean"}`, 0, false},
	{"short", `{"type":["string","null"],"minLength":2,"maxLength":5}`, 0, false},
	{"point", `{"type":"object","properties":{"kind":{"const":"point"},"x":{"type":"number"},"y":{"type":"number"}},"required":["kind","x","y"]}`, 0, false},
	{"list", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node"}},"required":["v"]}},"$ref":"#/$defs/node"}`, 0, false},
	{"counts", `{"type":"object","additionalProperties":{"type":"integer"}}`, 0, true},
	{"integer", `{"type":"integer"}`, 0.3, false},
	{"matrix", `{"type":"array","maxItems":3,"items":{"type":"array","maxItems":3,"items":{"enum":[0,1]}}}`, 0, false},
	{"shapes", `{"type":"array","maxItems":3,"items":{"oneOf":[
		{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"]},
		{"type":"object","properties":{"kind":{"enum":["square","box"]},"side":{"type":"integer"}},"required":["kind","side"]},
		{"type":"null"}]}}`, 0, false},
	{"nullable", `{"$defs":{"p":{"type":"object","properties":{"n":{"type":"string","maxLength":10}},"required":["n"]}},
		"type":"object","properties":{"a":{"anyOf":[{"$ref":"#/$defs/p"},{"type":"null"}]},"b":{"anyOf":[{"type":"integer"},{"type":"string","maxLength":4}]}},"required":["a","b"]}`, 0, false},
	{"patterned", `{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}(-[0-9]{4})?$"},
		"day":{"type":"string","format":"date"},"at":{"type":"string","format":"date-time"},"ip":{"type":"string","format":"ipv4"},
		"id":{"type":"string","format":"uuid"},"mail":{"type":"string","format":"email"},"word":{"type":"string","pattern":"(^|\\s)cat\\W","maxLength":12},
		"code":{"type":"string","pattern":"^\\w+[^\\d\\s]$"}},
		"required":["zip","day","at","ip","id","mail","word","code"]}`, 0, false},
	{"bounded", `{"type":"array","minItems":1,"maxItems":4,"items":{"type":"object","properties":{"port":{"type":"integer","minimum":1,"maximum":65535},
		"p":{"type":"number","minimum":0,"maximum":1},"t":{"type":"number","exclusiveMinimum":-40.5,"exclusiveMaximum":60},
		"even":{"type":"integer","multipleOf":2,"exclusiveMaximum":0},"cents":{"type":"number","multipleOf":0.01,"minimum":0}},"required":["port","p","t","even","cents"]}}`, 0, false},
	{"tuple", `{"type":"array","prefixItems":[{"type":"string","maxLength":6},{"type":"integer","minimum":0},{"enum":["on","off"]}],"items":false,"minItems":2}`, 0, false},
	{"tuple07", `{"type":"object","properties":{"row":{"type":"array","items":[{"type":"boolean"},{"type":"null"}],"additionalItems":{"type":"number"},"maxItems":4}},"required":["row"]}`, 0, false},
	{"extended", `{"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},
		"allOf":[{"$ref":"#/$defs/base"},{"properties":{"tag":{"type":"string","maxLength":6}},"required":["tag"]}]}`, 0, false},
}

func init() {
	// An object of 70 properties: property sets wider than 64 bits.
	schemas = append(schemas, struct {
		name, schema string
		endBias      float64
		open         bool
	}{"wide", wideSchema(70), 0, true})
}

func TestRepliesValidate(t *testing.T) {
	l := llama(t)
	seeds := 30
	if testing.Short() {
		seeds = 6
	}
	for _, sc := range schemas {
		var schema any = true
		var root map[string]any
		if sc.schema != "" {
			dec := stdjson.NewDecoder(strings.NewReader(sc.schema))
			dec.UseNumber()
			if err := dec.Decode(&schema); err != nil {
				t.Fatal(err)
			}
			root = schema.(map[string]any)
		}
		h := l.Host()
		s, err := sdktest.NewSession(New(), sc.schema, l.Vocab, h)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		ends, tokens, forced := map[string]int{}, 0, 0
		n, maxTokens := seeds, 3000
		if sc.name == "wide" { // a random model adds property after property
			n, maxTokens = min(seeds, 6), 15000
		}
		for seed := range n {
			opt := sdktest.Options{Seed: uint64(seed), MaxTokens: maxTokens, EndBias: sc.endBias}
			if sc.open || seed%2 == 1 {
				opt.Prefer, opt.PreferBias = closer(l), 0.5
			}
			rep, err := s.Reply(opt)
			if err != nil {
				t.Fatalf("%s seed %d: %v", sc.name, seed, err)
			}
			ends[rep.End]++
			tokens += len(rep.Tokens)
			forced += rep.Forced
			if rep.End != sdktest.EndStop && rep.End != sdktest.EndToken {
				t.Errorf("%s seed %d: reply %q ended by %s", sc.name, seed, rep.Text, rep.End)
				continue
			}
			v, err := decodeOne(rep.Text)
			if err == nil {
				err = validate(schema, v, root)
			}
			if err != nil {
				t.Errorf("%s seed %d: reply %q: %v", sc.name, seed, rep.Text, err)
			}
		}
		if len(h.Logs) > 0 {
			t.Errorf("%s: unexpected log lines %q", sc.name, h.Logs)
		}
		t.Logf("%-8s ends %v, %d tokens (%d forced)", sc.name, ends, tokens, forced)
	}
}

// closer marks the tokens that contain a quote, a closing bracket or a
// comma.
func closer(l *sdktest.Llama3) func(int32) bool {
	return func(id int32) bool {
		return bytes.ContainsAny(l.Vocab.Token(id), `"]},`)
	}
}

func TestBadSchemas(t *testing.T) {
	l := llama(t)
	var many strings.Builder
	many.WriteString(`{"properties":{`)
	for i := range maxProps + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"p%d":{}`, i)
	}
	many.WriteString(`}}`)
	for _, schema := range []string{
		`{"not":{"enum":["a"]}}`,
		`{"type":"text"}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":[1]}},"required":["a"]}`,
		`{"$ref":"#"}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"$ref":"other.json#/a"}`,
		`{"$ref":"#anchor"}`,
		`{"minLength":1e10}`,
		`{"$ref":"#/$defs/missing"}`,
		`{"$defs":{"n":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}`,
		`{"enum":[1,2],"type":"string"}`,
		`{"maxLength":-1}`,
		`[1]`,
		`{"type":"string"} trailing`,
		many.String(),
	} {
		if err := New().Init(schema, l.Vocab, nil); err == nil {
			t.Errorf("%.60s: accepted", schema)
		}
	}
}

// TestTakesBackInvalidPrefix hands the controller a reply begun without
// it, as after a hot swap.
func TestTakesBackInvalidPrefix(t *testing.T) {
	l := llama(t)
	prefix := l.Tokenizer.Encode(`{"a": 1, "b": nope`)
	rep, err := sdktest.Run(New(), ``, l.Vocab, l.Host(), sdktest.Options{Prefix: prefix, Prefer: closer(l), PreferBias: 0.5, MaxTokens: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeOne(rep.Text); err != nil || rep.Back == 0 || !strings.HasPrefix(string(rep.Text), `{"a": 1, "b":`) {
		t.Fatalf("reply %q, %d taken back: %v", rep.Text, rep.Back, err)
	}
}
