package regex

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

var benchPatterns = []struct{ name, expr string }{
	{"phone", `\(?[0-9]{3}\)?[ -][0-9]{3}-[0-9]{4}`},
	{"sentence", `[A-Z][a-z]{1,8}( [a-z]{1,8}){0,5}\.`},
	{"any", `(?s).{0,64}`},
	{"unicode", `[\p{L} ]{1,40}`},
}

// BenchmarkStep replays replies that the controller produced, with warm
// caches, over the 128,256-token Llama 3 vocabulary.
func BenchmarkStep(b *testing.B) {
	l := llama(b)
	for _, p := range benchPatterns {
		b.Run(p.name, func(b *testing.B) {
			c := New()
			s, err := sdktest.NewSession(c, p.expr, l.Vocab, l.Host())
			if err != nil {
				b.Fatal(err)
			}
			var replies []sdktest.Reply
			for seed := range 32 {
				rep, err := s.Reply(sdktest.Options{Seed: uint64(seed), MaxTokens: 200, EndBias: 0.1})
				if err != nil {
					b.Fatal(err)
				}
				replies = append(replies, rep)
			}
			sdktest.Replay(b, c, replies)
		})
	}
}

// BenchmarkInit measures Init: the token trie and the start state's mask.
func BenchmarkInit(b *testing.B) {
	l := llama(b)
	for range b.N {
		if err := New().Init(`(?s).{0,64}`, l.Vocab, nil); err != nil {
			b.Fatal(err)
		}
	}
}
