package sdk_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

// words is a Grammar over the prefixes of a set of strings.
type words []string

func (w words) Start() string { return "" }

func (w words) Next(s string, b byte) (string, bool) {
	s += string(b)
	return s, slices.ContainsFunc(w, func(x string) bool { return strings.HasPrefix(x, s) })
}

func (w words) Accepts(s string) bool { return slices.Contains(w, s) }

func ids(m *sdk.Mask) []int32 {
	if m == nil {
		return nil
	}
	return m.AppendIDs(nil)
}

func TestConstraintForcesAndStops(t *testing.T) {
	c := sdk.NewConstraint[string](words{"cab"}, toy(), nil, sdk.ConstraintOptions{})
	var r sdk.Result
	c.Step(nil, &r)
	if !slices.Equal(r.Force, []int32{2, 0, 1}) || !r.Stop || r.Mask != nil {
		t.Fatalf("force %v stop %v mask %v", r.Force, r.Stop, ids(r.Mask))
	}
}

// TestConstraintFails: where no token can continue a reply that the
// grammar does not accept yet ("a" then a "z" that no token spells), the
// step is a failure, not a stop that would leave the reply unfinished.
func TestConstraintFails(t *testing.T) {
	c := sdk.NewConstraint[string](words{"az"}, toy(), nil, sdk.ConstraintOptions{NoForce: true})
	var r sdk.Result
	c.Step(nil, &r)
	if r.Fail || r.Stop || !slices.Equal(ids(r.Mask), []int32{0}) {
		t.Fatalf("at the start: fail %v stop %v mask %v", r.Fail, r.Stop, ids(r.Mask))
	}
	r.Reset()
	c.Step([]int32{0}, &r)
	if !r.Fail || r.Stop || r.Flags()&abi.FlagFail == 0 {
		t.Fatalf("after a: fail %v stop %v flags %#x", r.Fail, r.Stop, r.Flags())
	}
}

func TestConstraintEndOfTurn(t *testing.T) {
	c := sdk.NewConstraint[string](words{"a", "ab", "abb"}, toy(), nil, sdk.ConstraintOptions{})
	var r sdk.Result
	c.Step(nil, &r)
	// "a" is forced, then "a" is complete but "b" or "bb" may follow.
	if !slices.Equal(r.Force, []int32{0}) || r.Stop || !slices.Equal(ids(r.Mask), []int32{1, 8, 10}) {
		t.Fatalf("force %v stop %v mask %v", r.Force, r.Stop, ids(r.Mask))
	}
	r.Reset()
	c.Step([]int32{0, 1}, &r)
	if r.Stop || !slices.Equal(ids(r.Mask), []int32{1, 8}) {
		t.Fatalf("after ab: stop %v mask %v", r.Stop, ids(r.Mask))
	}
}

func TestConstraintTakesBack(t *testing.T) {
	h := sdktest.NewHost(nil)
	c := sdk.NewConstraint[string](words{"abc", "bb"}, toy(), h, sdk.ConstraintOptions{NoForce: true})
	var r sdk.Result
	c.Step([]int32{0, 2, 1}, &r) // "a", "c", "b": "ac" breaks it
	if r.Backtrack != 2 || c.State() != "a" || !slices.Equal(ids(r.Mask), []int32{1}) {
		t.Fatalf("backtrack %d state %q mask %v", r.Backtrack, c.State(), ids(r.Mask))
	}
	if len(h.Logs) != 1 {
		t.Errorf("log %q", h.Logs)
	}
	r.Reset()
	c.Reset()
	c.Step([]int32{8}, &r) // a special token is never text
	if r.Backtrack != 1 {
		t.Errorf("special token kept: backtrack %d", r.Backtrack)
	}
}

// letters accepts up to max letters a and b; classed adds token classes.
type letters struct{ max int }

func (l letters) Start() int { return 0 }
func (l letters) Next(s int, b byte) (int, bool) {
	return s + 1, (b == 'a' || b == 'b') && s < l.max
}
func (l letters) Accepts(int) bool { return true }

type classed struct{ letters }

func (classed) TokenClass(b []byte) (int, int) {
	if len(b) > 0 && strings.Trim(string(b), "ab") == "" {
		return 1, len(b)
	}
	return 0, 0
}

func (c classed) StateClass(s int) (int, int) { return 1, c.max - s }

func TestTokenClassesAgree(t *testing.T) {
	v := toy()
	plain := sdk.NewConstraint[int](letters{4}, v, nil, sdk.ConstraintOptions{NoForce: true})
	fast := sdk.NewConstraint[int](classed{letters{4}}, v, nil, sdk.ConstraintOptions{NoForce: true})
	for _, text := range [][]int32{{}, {0}, {4}, {4, 1}, {4, 10}} {
		var r1, r2 sdk.Result
		plain.Reset()
		fast.Reset()
		plain.Step(text, &r1)
		fast.Step(text, &r2)
		if !slices.Equal(ids(r1.Mask), ids(r2.Mask)) || r1.Stop != r2.Stop {
			t.Errorf("after %v: mask %v stop %v, with classes %v %v", text, ids(r1.Mask), r1.Stop, ids(r2.Mask), r2.Stop)
		}
	}
}

// script is a controller that answers each step from a list and records
// what it was given.
type script struct {
	results  []sdk.Result
	appended [][]int32
}

func (s *script) Init(string, *sdk.Vocab, sdk.Host) error { return nil }
func (s *script) Begin([]int32) error                     { return nil }
func (s *script) Step(app []int32, r *sdk.Result) {
	s.appended = append(s.appended, slices.Clone(app))
	*r = s.results[len(s.appended)-1]
}

func TestSessionAppliesResults(t *testing.T) {
	v := toy()
	only := func(id int32) *sdk.Mask {
		m := sdk.NewMask(v.Len())
		m.Allow(id)
		return m
	}
	c := &script{results: []sdk.Result{
		{Force: []int32{0, 1}, Mask: only(2)}, // force "a" "b", then sample "c"
		{Backtrack: 2, Mask: only(3)},         // take back "b" "c", sample " "
		{Backtrack: 9, Force: []int32{4}, Stop: true},
	}}
	rep, err := sdktest.Run(c, "", v, sdktest.NewHost(nil), sdktest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(rep.Text) != "ab" || rep.End != sdktest.EndStop || rep.Forced != 3 || rep.Back != 4 || rep.Steps != 3 {
		t.Fatalf("reply %q ended by %s: %d forced, %d back, %d steps", rep.Text, rep.End, rep.Forced, rep.Back, rep.Steps)
	}
	want := [][]int32{{}, {0, 1, 2}, {3}}
	for i, app := range c.appended {
		if !slices.Equal(app, want[i]) {
			t.Errorf("step %d got %v, want %v", i, app, want[i])
		}
	}
	empty := &script{results: []sdk.Result{{Mask: sdk.NewMask(v.Len())}}}
	if rep, _ := sdktest.Run(empty, "", v, sdktest.NewHost(nil), sdktest.Options{}); rep.End != sdktest.EndEmptyMask {
		t.Errorf("an empty mask ended the reply by %s", rep.End)
	}
	failed := &script{results: []sdk.Result{{Mask: only(0)}, {Backtrack: 1, Force: []int32{2}, Stop: true, Fail: true}}}
	if rep, _ := sdktest.Run(failed, "", v, sdktest.NewHost(nil), sdktest.Options{}); rep.End != sdktest.EndFail || len(rep.Tokens) != 0 {
		t.Errorf("a failed step ended the reply %q by %s", rep.Text, rep.End)
	}
	bad := &script{results: []sdk.Result{{Force: []int32{99}}}}
	if _, err := sdktest.Run(bad, "", v, sdktest.NewHost(nil), sdktest.Options{}); err == nil {
		t.Error("a forced token outside the vocabulary passed")
	}
}

// counted is a Grammar that counts its transitions.
type counted struct {
	words
	next *int
}

func (c counted) Next(s string, b byte) (string, bool) {
	*c.next++
	return c.words.Next(s, b)
}

// TestConstraintWarmUp checks that WarmUp computes the masks of the
// states after the first tokens in advance: a step into one of them then
// only follows the token's bytes, while without it the step walks the
// trie.
func TestConstraintWarmUp(t *testing.T) {
	g := words{"abc", "ba", "bb", "cab"}
	for _, warm := range []int{0, 1_000_000} {
		n := 0
		c := sdk.NewConstraint[string](counted{g, &n}, toy(), nil, sdk.ConstraintOptions{NoForce: true, WarmUp: warm})
		var r sdk.Result
		c.Step(nil, &r)
		r.Reset()
		n = 0
		c.Step([]int32{1}, &r) // "b": "a" or "b" may follow
		if !slices.Equal(ids(r.Mask), []int32{0, 1}) {
			t.Fatalf("warm-up %d: mask after b %v", warm, ids(r.Mask))
		}
		if walked := n > 1; walked != (warm == 0) {
			t.Errorf("warm-up %d: the step took %d transitions", warm, n)
		}
	}
}
