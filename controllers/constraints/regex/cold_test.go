package regex

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// BenchmarkNewState is the mask of a state met for the first time, the
// cost behind the controller's p99 step: with a fresh DFA (transitions
// built during the walk) and with the DFA's transitions already built.
func BenchmarkNewState(b *testing.B) {
	l := llama(b)
	trie := l.Vocab.Trie()
	const expr, prefix = `[A-Z][a-z]+( [a-z]+){3,12}\.`, "Hello w"
	state := func(d *DFA) *State {
		s := d.Start()
		for _, c := range []byte(prefix) {
			s, _ = d.Next(s, c)
		}
		return s
	}
	m := sdk.NewMask(l.Vocab.Len())
	b.Run("fresh-dfa", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			d, _ := Compile(expr)
			s := state(d)
			m.Clear()
			b.StartTimer()
			d.WalkTrie(trie, s, m, nil)
		}
	})
	b.Run("built-dfa", func(b *testing.B) {
		d, _ := Compile(expr)
		s := state(d)
		_, visited := d.WalkTrie(trie, s, m, nil)
		for b.Loop() {
			m.Clear()
			d.WalkTrie(trie, s, m, nil)
		}
		b.ReportMetric(float64(visited), "nodes")
	})
}
