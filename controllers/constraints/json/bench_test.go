package json

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

// BenchmarkStep replays replies that the controller produced, with warm
// caches, over the 128,256-token Llama 3 vocabulary.
func BenchmarkStep(b *testing.B) {
	l := llama(b)
	for _, name := range []string{"any", "person", "list", "matrix", "shapes", "nullable", "patterned", "bounded", "wide"} {
		b.Run(name, func(b *testing.B) {
			var schema string
			for _, sc := range schemas {
				if sc.name == name {
					schema = sc.schema
				}
			}
			c := New()
			s, err := sdktest.NewSession(c, schema, l.Vocab, l.Host())
			if err != nil {
				b.Fatal(err)
			}
			var replies []sdktest.Reply
			for seed := range 32 {
				opt := sdktest.Options{Seed: uint64(seed), MaxTokens: 1000, EndBias: 0.3, Prefer: closer(l), PreferBias: 0.5}
				rep, err := s.Reply(opt)
				if err != nil {
					b.Fatal(err)
				}
				replies = append(replies, rep)
			}
			sdktest.Replay(b, c, replies)
		})
	}
}

// BenchmarkColdStep is BenchmarkStep for "person" with a mask cache that
// keeps only the last state, so that nearly every step computes its mask
// with a walk over the token trie: its p99 is the cost of a state seen
// for the first time.
func BenchmarkColdStep(b *testing.B) {
	l := llama(b)
	warm := New()
	s, err := sdktest.NewSession(warm, schemas[1].schema, l.Vocab, l.Host())
	if err != nil {
		b.Fatal(err)
	}
	var replies []sdktest.Reply
	for seed := range 8 {
		rep, err := s.Reply(sdktest.Options{Seed: uint64(seed), Prefer: closer(l), PreferBias: 0.5})
		if err != nil {
			b.Fatal(err)
		}
		replies = append(replies, rep)
	}
	g := newGrammar()
	if g.root, err = g.compileSchema(schemas[1].schema); err != nil {
		b.Fatal(err)
	}
	cold := &Controller{c: sdk.NewConstraint(g, l.Vocab, l.Host(), sdk.ConstraintOptions{MaxCache: 1})}
	sdktest.Replay(b, cold, replies)
}

// BenchmarkCompile compiles each test schema (what Init does before the
// masks: patterns' automata, number bounds, combinations).
func BenchmarkCompile(b *testing.B) {
	for _, sc := range schemas {
		b.Run(sc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := newGrammar().compileSchema(sc.schema); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
