package controllers

import (
	"strings"
	"testing"
)

// only7With is allowOnly(7) with init as dw_init's body; its data holds
// "init" at 700 (a key to count dw_init calls by appending to it) and
// "refuse: want a digit" (20 bytes) at 710, and extra is added.
func only7With(init, extra string) string {
	return watModule(init, "(i32.const 1024)", `
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00")
  (data (i32.const 2048) "`+le32(1<<7)+`")
  (data (i32.const 700) "init")
  (data (i32.const 710) "refuse: want a digit")`+extra)
}

// countInit appends to the key "init" at each dw_init.
const countInit = `(drop (call $kv_append (i32.const 700) (i32.const 4) (i32.const 700) (i32.const 4)))`

// describeDigit is a dw_describe that says the argument is required:
// flags 1, the text "a digit" (7 bytes) at 3072.
const describeDigit = `
  (data (i32.const 3000) "\01\00\00\00\00\0c\00\00\07\00\00\00")
  (data (i32.const 3072) "a digit")
  (func (export "dw_describe") (result i32) (i32.const 3000))`

// TestDescribe reads dw_describe's answers, and refuses malformed ones
// with an error that says what is wrong.
func TestDescribe(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		reason, extra string
		doc           string
		required      bool
		err           string
	}{
		{"no dw_describe", "", "", false, ""},
		{"a required argument", describeDigit, "a digit", true, ""},
		{"an optional one, with a newline shown escaped", `
  (data (i32.const 3000) "\00\00\00\00\00\0c\00\00\04\00\00\00")
  (data (i32.const 3072) "a\0ab.")
  (func (export "dw_describe") (result i32) (i32.const 3000))`, `a\x0ab.`, false, ""},
		{"0: not described", `(func (export "dw_describe") (result i32) (i32.const 0))`, "", false, ""},
		{"text outside memory", `
  (data (i32.const 3000) "\00\00\00\00\00\00\ff\00\07\00\00\00")
  (func (export "dw_describe") (result i32) (i32.const 3000))`, "", false, "outside memory"},
		{"unknown flags", `
  (data (i32.const 3000) "\02\00\00\00\00\0c\00\00\07\00\00\00")
  (func (export "dw_describe") (result i32) (i32.const 3000))`, "", false, "unknown bits"},
		{"a trap", `(func (export "dw_describe") (result i32) unreachable)`, "", false, "dw_describe trapped"},
	}
	for _, c := range cases {
		mod := h.load(t, "described", only7With("(i32.const 0)", c.extra))
		doc, required, err := mod.Describe()
		if doc != c.doc || required != c.required || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: Describe() = %q, %v, %v; want %q, %v, an error with %q", c.reason, doc, required, err, c.doc, c.required, c.err)
		}
	}
	if _, err := h.rt.Load("wrongtype", []byte(only7With("(i32.const 0)", `(func (export "dw_describe") (param i32) (result i32) (i32.const 0))`))); err == nil || !strings.Contains(err.Error(), "dw_describe") {
		t.Errorf("a dw_describe of the wrong type: %v, want a load error naming it", err)
	}
}
