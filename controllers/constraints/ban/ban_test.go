package ban

import (
	"bytes"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

func TestNeverEmitsBannedWords(t *testing.T) {
	l, err := sdktest.LoadLlama3()
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"the", "Ing", " a", "é", "ion", "er", "e"}
	arg := `["the","Ing"," a","é","ion","er","e"]`
	// Steer sampling towards tokens that hold pieces of banned words,
	// where a mask mistake would show.
	risky := func(id int32) bool {
		tok := bytes.ToLower(l.Vocab.Token(id))
		return bytes.ContainsAny(tok, "tghinoré") || bytes.HasSuffix(tok, []byte(" "))
	}
	seeds := 30
	if testing.Short() {
		seeds = 6
	}
	h := l.Host()
	s, err := sdktest.NewSession(New(), arg, l.Vocab, h)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for seed := range seeds {
		rep, err := s.Reply(sdktest.Options{Seed: uint64(seed), MaxTokens: 150, Prefer: risky, PreferBias: 0.7})
		if err != nil {
			t.Fatal(err)
		}
		if rep.End != sdktest.EndMaxTokens && rep.End != sdktest.EndToken {
			t.Errorf("seed %d: reply ended by %s", seed, rep.End)
		}
		text := strings.ToLower(string(rep.Text))
		for _, w := range words {
			if strings.Contains(text, strings.ToLower(w)) {
				t.Errorf("seed %d: reply %q contains %q", seed, rep.Text, w)
			}
		}
		total += len(rep.Tokens)
	}
	if total < seeds*50 {
		t.Errorf("only %d tokens in %d replies", total, seeds)
	}
	if len(h.Logs) > 0 {
		t.Errorf("log %q", h.Logs)
	}
}

func TestTakesBackBannedPrefix(t *testing.T) {
	l, err := sdktest.LoadLlama3()
	if err != nil {
		t.Fatal(err)
	}
	prefix := l.Tokenizer.Encode("I said BAD words")
	rep, err := sdktest.Run(New(), `["bad"]`, l.Vocab, l.Host(), sdktest.Options{Prefix: prefix, MaxTokens: 20})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Back == 0 || strings.Contains(strings.ToLower(string(rep.Text)), "bad") {
		t.Fatalf("reply %q, %d taken back", rep.Text, rep.Back)
	}
}

func TestAutomaton(t *testing.T) {
	a, err := Compile([]string{"he", "she", "his", "hers"})
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]bool{"ushers": false, "sHe": false, "hi": true, "h is": true, "ahis": false, "shx": true} {
		s, ok := a.Start(), true
		for i := 0; i < len(text) && ok; i++ {
			s, ok = a.Next(s, text[i])
		}
		if ok != want {
			t.Errorf("%q: allowed %v, want %v", text, ok, want)
		}
	}
	if _, err := Compile([]string{"a", ""}); err == nil {
		t.Error("an empty word compiled")
	}
}
