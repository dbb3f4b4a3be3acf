package json

import "testing"

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
