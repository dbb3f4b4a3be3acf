package json

import (
	"strings"
	"testing"
)

// TestNoRespelledNames: a key spelled with an escape that decodes to a
// declared name ("\u0061" for "a") would be taken as undeclared, its
// value not checked against the name's schema, and a validator would
// read the name; U+2028 written raw or escaped is one character too.
// And a name required under additionalProperties false cannot come.
func TestNoRespelledNames(t *testing.T) {
	open := `{"type":"object","properties":{"a":{"type":"string"},"b\u2028":{"type":"string"},"n\n":{"type":"string"}},"additionalProperties":true}`
	for _, c := range []struct {
		schema, text string
		ok           bool
	}{
		{open, `{"\u0061":1}`, false},
		{open, `{"\u0061":"x"}`, false},
		{open, `{"a":"x","c":1}`, true},
		{open, "{\"b\u2028\":\"x\"}", true},
		{open, "{\"b\u2028\":1}", false},
		{open, `{"b\u2028":1}`, false},
		{open, `{"n\n":1}`, false},
		{open, `{"n\u000a":1}`, false},
		{open, `{"n\n":"x"}`, true},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false}}}`, `{"o":{"a":1,"b":1}}`, false},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false}}}`, `{}`, true},
		{`{"type":"object","properties":{"a":{}},"required":["b"]}`, `{"a":1,"b":1}`, true},
	} {
		if got := accepts(t, c.schema, c.text); got != c.ok {
			t.Errorf("%s under %s: %v, want %v", c.text, c.schema, got, c.ok)
		}
	}
}

type acceptCase struct {
	schema, text string
	ok           bool
}

func checkAccepts(t *testing.T, cases []acceptCase) {
	t.Helper()
	for _, c := range cases {
		if got := accepts(t, c.schema, c.text); got != c.ok {
			t.Errorf("%s under %s: %v, want %v", c.text, c.schema, got, c.ok)
		}
	}
}

// TestPropertyCounts: minProperties and maxProperties count what a
// validator counts (distinct names): a repeated undeclared key counts
// once toward the minimum and twice toward the maximum.
func TestPropertyCounts(t *testing.T) {
	min1 := `{"minProperties":1}`
	max2 := `{"maxProperties":2}`
	decl := `{"type":"object","properties":{"a":{},"b":{},"c":{}},"required":["a"],"minProperties":2,"maxProperties":2}`
	checkAccepts(t, []acceptCase{
		{min1, `{}`, false}, {min1, `{"x":1}`, true}, {min1, `{"x":1,"x":2}`, true},
		{max2, `{}`, true}, {max2, `{"x":1,"y":2}`, true}, {max2, `{"x":1,"y":2,"z":3}`, false},
		{`{"maxProperties":0}`, `{}`, true}, {`{"maxProperties":0}`, `{"a":1}`, false},
		{decl, `{"a":1}`, false}, {decl, `{"a":1,"b":2}`, true}, {decl, `{"b":1,"c":2}`, false},
		{decl, `{"b":1,"a":2}`, true}, {decl, `{"a":1,"b":2,"c":3}`, false},
		{`{"type":"object","properties":{"a":{}},"minProperties":2,"additionalProperties":true}`, `{"a":1,"x":1}`, true},
		{`{"type":"object","properties":{"a":{}},"minProperties":2,"additionalProperties":true}`, `{"x":1,"x":1}`, false},
	})
	// Two undeclared names cannot be told apart: refused, not guessed.
	g := newGrammar()
	if _, err := g.compileSchema(`{"minProperties":2}`); err == nil {
		t.Error(`{"minProperties":2} accepted; the controller cannot count two distinct undeclared names`)
	}
}

// TestDependentRequired: a property, once present, makes others
// required (transitively, as a validator applies each present one's).
func TestDependentRequired(t *testing.T) {
	dr := `{"dependentRequired":{"bar":["foo"],"foo":["baz"]}}`
	d7 := `{"type":"object","properties":{"bar":{"type":"integer"},"foo":{},"baz":{}},"dependencies":{"bar":["foo"]}}`
	checkAccepts(t, []acceptCase{
		{dr, `{}`, true}, {dr, `{"bar":1}`, false}, {dr, `{"bar":1,"foo":2}`, false},
		{dr, `{"bar":1,"foo":2,"baz":3}`, true}, {dr, `{"foo":2,"baz":3}`, true}, {dr, `{"baz":3}`, true},
		{d7, `{"bar":1}`, false}, {d7, `{"bar":1,"foo":1}`, true}, {d7, `{"foo":1}`, true},
	})
	// Beside maxProperties a property written early can leave no room for
	// a required one and its dependencies: a dead end, so refused.
	for _, sc := range []string{
		`{"type":"object","properties":{"a":{}},"additionalProperties":false,"dependentRequired":{"a":["b"]},"maxProperties":1}`,
		`{"dependentRequired":{"a":["b"]},"maxProperties":1}`,
	} {
		if _, err := newGrammar().compileSchema(sc); err == nil || !strings.Contains(err.Error(), "maxProperties and dependentRequired") {
			t.Errorf("%s: %v, want it refused", sc, err)
		}
	}
	if err := New().Init(`{"dependencies":{"a":{"required":["b"]}}}`, llama(t).Vocab, nil); err == nil {
		t.Error("dependencies with a schema accepted")
	}
}
