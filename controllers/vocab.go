package controllers

import (
	"sync"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// Vocab is the vocabulary as controllers see it: every token's bytes and
// whether it is special, encoded once in the ABI's layout.
type Vocab struct {
	Tokens  [][]byte
	Special []bool
	// Encode tokenises plain text (the tokenize import); nil refuses.
	Encode func(string) []int32
	blob   []byte

	trieOnce sync.Once
	trieBlob []byte
}

// NewVocab builds the vocabulary of tok for a model with n logits (ids
// the tokenizer lacks get no bytes).
func NewVocab(tok *tokenizer.Tokenizer, n int) *Vocab {
	v := &Vocab{Tokens: make([][]byte, n), Special: make([]bool, n), Encode: tok.Encode}
	for id := range v.Tokens {
		v.Tokens[id] = tok.TokenBytes(int32(id))
		v.Special[id] = tok.IsSpecial(int32(id))
	}
	v.blob = abi.AppendVocab(nil, v.Tokens, v.Special)
	return v
}

// trie returns the token trie in the ABI's trie format, built on first
// use (some 0.1 s for 128k tokens) and then shared by every instance.
// It is built by the Go SDK's builder, the one a Go guest uses when it
// has no host trie: the host takes the SDK's algorithm, but no byte of
// the format (that is package abi's).
func (v *Vocab) trie() []byte {
	v.trieOnce.Do(func() {
		sv, err := sdk.ParseVocab(v.blob, len(v.Tokens))
		if err != nil {
			panic(err) // v.blob comes from abi.AppendVocab
		}
		v.trieBlob = sdk.NewTrie(sv).AppendABI(nil)
	})
	return v.trieBlob
}
