package controllers

import (
	"sync"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// vocabulary is the vocabulary as controllers see it: every token's
// bytes and whether it is special, encoded once in the ABI's layout.
type vocabulary struct {
	Tokens  [][]byte
	Special []bool
	// Encode tokenises plain text (the tokenize import); nil refuses.
	Encode func(string) []int32
	blob   []byte

	trieOnce sync.Once
	trieBlob []byte
}

// newVocabulary builds the vocabulary of tok for a model with n logits
// (ids the tokenizer lacks get no bytes).
func newVocabulary(tok *tokenizer.Tokenizer, n int) *vocabulary {
	v := &vocabulary{Tokens: make([][]byte, n), Special: make([]bool, n), Encode: tok.Encode}
	for id := range v.Tokens {
		v.Tokens[id] = tok.TokenBytes(int32(id))
		v.Special[id] = tok.IsSpecial(int32(id))
	}
	v.blob = abi.AppendVocab(nil, v.Tokens, v.Special)
	return v
}

// trie returns the token trie in the ABI's trie format, built on first
// use (some 0.1 s for 128k tokens) and then shared by every instance. It
// is built by abi.BuildTrie, the builder a Go guest's SDK uses when it
// has no host trie, from the tokens as the vocabulary's layout holds
// them (cut to abi.MaxTokenLen bytes).
func (v *vocabulary) trie() []byte {
	v.trieOnce.Do(func() {
		token := func(id int32) []byte {
			t := v.Tokens[id]
			return t[:min(len(t), abi.MaxTokenLen)]
		}
		special := func(id int32) bool { return v.Special[id] }
		nodes, sets, ids := abi.BuildTrie(abi.TrieOrder(len(v.Tokens), token, special), token, true)
		v.trieBlob = abi.AppendTrie(nil, nodes, sets, ids)
	})
	return v.trieBlob
}
