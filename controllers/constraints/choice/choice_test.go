package choice

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

func TestReplyIsAChoice(t *testing.T) {
	l, err := sdktest.LoadLlama3()
	if err != nil {
		t.Fatal(err)
	}
	lists := [][]string{
		{"yes", "no", "maybe"},
		{"Paris", "Paris, France", "London", "Londonderry"},
		{"日本", "中国", "한국", "日本語"},
		{"only one choice"},
		{"", "x"},
		{"a.b", "a*b", "(a|b)", `\d`},
		{" leading space", "trailing space ", "new\nline"},
	}
	for _, list := range lists {
		arg, _ := json.Marshal(list)
		h := l.Host()
		s, err := sdktest.NewSession(New(), string(arg), l.Vocab, h)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for seed := range 30 {
			rep, err := s.Reply(sdktest.Options{Seed: uint64(seed), EndBias: 0.3})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(list, string(rep.Text)) || (rep.End != sdktest.EndStop && rep.End != sdktest.EndToken) {
				t.Errorf("%q seed %d: reply %q ended by %s", list, seed, rep.Text, rep.End)
			}
			seen[string(rep.Text)] = true
		}
		if len(seen) < min(len(list), 2) {
			t.Errorf("%q: replies %v only", list, seen)
		}
		if len(h.Logs) > 0 {
			t.Errorf("%q: log %q", list, h.Logs)
		}
	}
}

func TestSingleChoiceIsForced(t *testing.T) {
	l, err := sdktest.LoadLlama3()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sdktest.Run(New(), `["The answer is 42."]`, l.Vocab, l.Host(), sdktest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(rep.Text) != "The answer is 42." || rep.Steps != 1 || rep.End != sdktest.EndStop {
		t.Fatalf("reply %q in %d steps, ended by %s", rep.Text, rep.Steps, rep.End)
	}
}

func TestBadArgument(t *testing.T) {
	for _, arg := range []string{``, `[]`, `"yes"`, `[1]`} {
		if _, err := Expr(arg); err == nil {
			t.Errorf("%q accepted", arg)
		}
	}
}
