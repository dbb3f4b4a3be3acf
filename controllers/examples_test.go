package controllers

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// shippedFS is the shipped controllers as committed in controllers/shipped
// (TestEmbeddedMatchSource there checks that they are what the source
// builds), the files controllers/shipped embeds.
var shippedFS = os.DirFS("shipped")

// TestShippedControllers runs every shipped controller through the host on
// the tiny model, as the registry finds them among the shipped ones, for several seeds and temperatures, and checks each
// reply with an independent validator.
func TestShippedControllers(t *testing.T) {
	h := newHarness(t)
	reg, err := newRegistry(h.rt, shippedFS)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	// Each case: the controller, its argument, whether every reply must
	// end within maxTokens (bounded constraints), and an independent
	// validator (given whether the reply was cut by the token limit, when
	// a valid prefix is enough).
	cases := []struct {
		name, arg string
		maxTokens int
		mustEnd   bool
		valid     func(text string, cut bool) error
	}{
		{"regex", `[a-z]{1,6}( [a-z]{1,6}){2}\.`, 48, true, matchAll(`[a-z]{1,6}( [a-z]{1,6}){2}\.`)},
		{"regex", `(yes|no|maybe)`, 16, true, matchAll(`(yes|no|maybe)`)},
		{"json", ``, 64, false, jsonValid},
		{"json", `{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer"}},"required":["ok","n"]}`, 400, true, func(s string, cut bool) error {
			if err := jsonValid(s, cut); err != nil || cut {
				return err
			}
			var v struct {
				OK *bool `json:"ok"`
				N  *int  `json:"n"`
			}
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return err
			}
			if v.OK == nil || v.N == nil {
				return fmt.Errorf("missing required properties")
			}
			return nil
		}},
		{"choice", `["red","green","light blue"]`, 16, true, func(s string, _ bool) error {
			if !slices.Contains([]string{"red", "green", "light blue"}, s) {
				return fmt.Errorf("not one of the choices")
			}
			return nil
		}},
		{"ban", `["the","and"]`, 32, false, func(s string, _ bool) error {
			if l := strings.ToLower(s); strings.Contains(l, "the") || strings.Contains(l, "and") {
				return fmt.Errorf("contains a banned word")
			}
			return nil
		}},
		{"maxwords", `3`, 64, true, func(s string, _ bool) error {
			if n := len(strings.Fields(s)); n > 3 {
				return fmt.Errorf("%d words", n)
			}
			return nil
		}},
	}
	for _, c := range cases {
		mod, err := reg.Get(c.name)
		if err != nil {
			t.Fatal(err)
		}
		// Each says what argument it takes; all but json need one.
		if doc, required, err := mod.Describe(); doc == "" || required != (c.name != "json") || err != nil {
			t.Errorf("%s describes its argument as %q, required %v (%v); want a line, required unless json", c.name, doc, required, err)
		}
		for seed := uint64(0); seed < 4; seed++ {
			temp := []float64{0, 0.7, 1.2, 2}[seed]
			d := h.driver(reg)
			if err := d.SwitchTo(mod, c.arg); err != nil {
				t.Fatal(err)
			}
			reply, st := h.replyWith(t, d, c.maxTokens, temp, seed)
			d.Close()
			text := strings.TrimSuffix(decode(h.vocab, reply), "<|eot_id|>")
			cut := st.Reason == engine.StopMaxTokens
			err := c.valid(text, cut)
			if err == nil && cut && c.mustEnd {
				err = fmt.Errorf("did not end within %d tokens", c.maxTokens)
			}
			if err != nil {
				t.Errorf("%s %s, temperature %g: reply %q (%s): %v\nlogs: %s", c.name, c.arg, temp, text, st.Reason, err, h.logText())
			}
		}
	}
}

// TestShippedRefusals: a switch to a shipped controller without the
// argument it needs, or with one it rejects, is refused with an error
// that says why and what it takes, and the previous controller stays.
func TestShippedRefusals(t *testing.T) {
	h := newHarness(t)
	reg, err := newRegistry(h.rt, shippedFS)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	d := h.driver(reg)
	defer d.Close()
	seven := h.load(t, "only7", allowOnly(7))
	if err := d.SwitchTo(seven, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, arg string
		want      []string
	}{
		{"regex", "", []string{"controller regex needs an argument: a Go regular expression"}},
		{"choice", "yes,no", []string{`controller choice refused its argument "yes,no"`, "must be a JSON array of strings", "(choice takes a JSON array of strings"}},
		{"maxwords", "many", []string{`refused its argument "many"`, "non-negative integer", "(maxwords takes a number"}},
	} {
		mod, err := reg.Get(c.name)
		if err != nil {
			t.Fatal(err)
		}
		err = d.SwitchTo(mod, c.arg)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %q: error %v, want it to say %q", c.name, c.arg, err, w)
			}
		}
		if cur, _ := d.Current(); cur != seven {
			t.Errorf("%s %q: after the refusal %v is active, want only7 still", c.name, c.arg, cur)
		}
	}
	if reply, _ := h.replyWith(t, d, 3, 1, 1); !slices.Equal(reply, []int32{7, 7, 7}) {
		t.Errorf("reply %v after the refusals, want only7's", reply)
	}
}

// jsonValid accepts a JSON value, or when cut, a prefix of one (which
// encoding/json reports as an unexpected end of input).
func jsonValid(s string, cut bool) error {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	if cut && err != nil && strings.Contains(err.Error(), "unexpected end of JSON input") {
		return nil
	}
	return err
}

func matchAll(expr string) func(string, bool) error {
	re := regexp.MustCompile(`^(?:` + expr + `)$`)
	return func(s string, _ bool) error {
		if !re.MatchString(s) {
			return fmt.Errorf("does not match %s", expr)
		}
		return nil
	}
}

// decode concatenates the tokens' bytes.
func decode(v *vocabulary, ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = append(b, v.Tokens[id]...)
	}
	return string(b)
}
