package maxwords

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

func TestWordLimit(t *testing.T) {
	l, err := sdktest.LoadLlama3()
	if err != nil {
		t.Fatal(err)
	}
	// Favour whitespace so that words end often, in every position of a
	// token.
	spacey := func(id int32) bool {
		return strings.ContainsFunc(string(l.Vocab.Token(id)), unicode.IsSpace)
	}
	for _, limit := range []int{0, 1, 3, 12} {
		s, err := sdktest.NewSession(New(), " "+strconv.Itoa(limit)+"\n", l.Vocab, l.Host())
		if err != nil {
			t.Fatal(err)
		}
		for seed := range 40 {
			opt := sdktest.Options{Seed: uint64(seed), MaxTokens: 400}
			if seed%2 == 1 {
				opt.Prefer, opt.PreferBias = spacey, 0.5
			}
			rep, err := s.Reply(opt)
			if err != nil {
				t.Fatal(err)
			}
			words := strings.Fields(string(rep.Text))
			if rep.End != sdktest.EndStop || len(words) != limit {
				t.Errorf("limit %d seed %d: %d words in %q, ended by %s", limit, seed, len(words), rep.Text, rep.End)
			}
			if r, _ := utf8.DecodeLastRune(rep.Text); unicode.IsSpace(r) {
				t.Errorf("limit %d seed %d: %q ends with whitespace", limit, seed, rep.Text)
			}
		}
	}
}

func TestBadArgument(t *testing.T) {
	for _, arg := range []string{"", "-1", "many"} {
		if err := New().Init(arg, nil, nil); err == nil {
			t.Errorf("%q accepted", arg)
		}
	}
}
