package controllers

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// TestShippedOnRealVocabularies runs the shipped regex and json
// controllers over the real vocabularies of Llama 3 (byte-level BPE),
// Mistral (SentencePiece: "▁" is a space, <0xNN> a byte) and Qwen3,
// sampling uniformly among the tokens each step allows, and checks every
// reply, as the tokenizer decodes it, with Go's regexp and encoding/json:
// the controllers see each token's bytes (vocabulary), so a token whose bytes
// differ from what it decodes to shows as an invalid reply.
func TestShippedOnRealVocabularies(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: builds three 32k–152k-token tries")
	}
	rt := newWasmRuntime(defaultLimits(), t.TempDir())
	defer rt.Close()
	reg, err := newRegistry(rt, shippedFS)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	schema := `{"type":"object","properties":{"ok":{"type":"boolean"},"name":{"type":"string"}},"required":["ok","name"]}`
	cases := []struct {
		name, arg string
		maxReply  int
		valid     func(text string, cut bool) error
	}{
		{"regex", `[a-z]{1,6}( [a-z]{1,6}){2}\.`, 64, matchAll(`[a-z]{1,6}( [a-z]{1,6}){2}\.`)},
		{"regex", `(yes|no|maybe)`, 16, matchAll(`(yes|no|maybe)`)},
		{"json", schema, 200, jsonValid},
	}
	for _, file := range []string{"llama3-tokenizer", "mistral-tokenizer", "qwen3-tokenizer"} {
		tok, err := tokenizer.Load(filepath.Join("..", "testdata", file, "tokenizer.json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		vocab := newVocabulary(tok, tok.VocabSize())
		prompt := tok.Encode("Answer briefly.")
		rng := rand.New(rand.NewPCG(3, uint64(len(vocab.Tokens))))
		for _, c := range cases {
			mod, err := reg.Get(c.name)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < 4; r++ {
				d := newDriver(rt, vocab, newKVStore(), nil, nil)
				d.Use(mod, c.arg)
				seq := append([]int32(nil), prompt...)
				d.StartReply(len(seq), c.maxReply)
				logits := make([]float32, len(vocab.Tokens))
				ended := false
				for len(seq)-len(prompt) < c.maxReply && !ended {
					d.Begin(seq)
					dir := d.End(logits)
					seq = seq[:len(seq)-min(dir.Backtrack, len(seq)-len(prompt))]
					seq = append(seq, dir.Force...)
					if dir.Stop {
						ended = true
						break
					}
					next := pick(rng, dir)
					if next < 0 { // nothing allowed
						break
					}
					if vocab.Special[next] { // an end-of-turn token: the reply ends
						ended = true
						break
					}
					seq = append(seq, next)
				}
				d.Close()
				text := tok.Decode(seq[len(prompt):]) // the tokenizer's text, not the vocabulary's bytes
				cut := !ended
				if err := c.valid(text, cut); err != nil || (cut && c.name == "regex") {
					t.Errorf("%s, %s %s: reply %q (cut %v): %v", file, c.name, c.arg, text, cut, err)
				}
			}
		}
	}
}
