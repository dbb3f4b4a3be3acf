package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// TokenizerJSON is the tokenizer.json that v stands for: the file that
// FromGGUF builds its tokenizer from, so that Parse (or Load) of these
// bytes gives FromGGUF's ids, except where a tokenizer.json cannot say
// what llama.cpp does: a byte that a byte-level vocabulary lacks
// (SmolLM2 lacks 0x04, 0x06 and a few more) is dropped before the
// merges, as Hugging Face does, where FromGGUF keeps it as a gap that no
// merge crosses, as llama.cpp does, so a text holding such a byte may
// get other ids.
//
// A SentencePiece vocabulary's merges are listed best score first, as a
// tokenizer.json ranks them by position. Tokens of equal score are
// listed in id order, as transformers' converter lists them; llama.cpp
// applies their merges leftmost first instead. Llama 2's and Mistral's
// runs of "▁" all score -1e9, and the two orders give the same ids on
// every run tested (1 to 70 spaces, in text and code); ties between other
// tokens are refused.
//
// # Errors
//
// Those of FromGGUF, and a SentencePiece vocabulary in which tokens that
// are not runs of one character share a score (gguf-py gives every token
// the same score when a model has only a tokenizer.json): their ids would
// differ.
func (v GGUFVocab) TokenizerJSON() ([]byte, error) {
	f, err := v.file()
	if err != nil {
		return nil, err
	}
	if m := f.Model; m.ranks != nil {
		if err := rankMerges(m); err != nil {
			return nil, err
		}
	}
	// Hugging Face's tokenizers library gives an added token the id of
	// the same text in the model's vocabulary, and ids after the
	// vocabulary's to the others, whatever id the file says: the added
	// tokens go in the vocabulary too, as in the files it writes.
	for _, a := range f.AddedTokens {
		f.Model.Vocab[a.Content] = a.ID
	}
	return marshal(f)
}

// marshal is json.Marshal without HTML escapes: "<|eot_id|>", not
// "\u003c|eot_id|\u003e".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// MarshalJSON writes the merges as "left right" strings, the form Load
// reads fastest (scanMerges), or as ["left", "right"] pairs when a token
// holds a space; nil is null, as before.
func (ms mergesJSON) MarshalJSON() ([]byte, error) {
	if ms == nil {
		return []byte("null"), nil
	}
	for _, m := range ms {
		if strings.Contains(m[0], " ") || strings.Contains(m[1], " ") {
			return marshal([][2]string(ms))
		}
	}
	list := make([]string, len(ms))
	for i, m := range ms {
		list[i] = m[0] + " " + m[1]
	}
	return marshal(list)
}

// rankMerges orders m's merges by their ranks, ties in the order given
// (their tokens' ids), and drops the ranks, so that the positions give
// the order. Several splits of one token share its rank, and whichever
// applies makes the same token; a rank shared by different tokens is
// refused unless they are runs of one character.
func rankMerges(m *modelJSON) error {
	order := make([]int, len(m.Merges))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return m.ranks[order[a]] < m.ranks[order[b]] })
	merges := make(mergesJSON, len(order))
	for k, i := range order {
		merges[k] = m.Merges[i]
		if k == 0 || m.ranks[order[k-1]] != m.ranks[i] {
			continue
		}
		p, q := m.Merges[order[k-1]], m.Merges[i]
		if a, b := p[0]+p[1], q[0]+q[1]; a != b && !sameRuns(a, b) {
			return fmt.Errorf("tokenizer.ggml.scores: tokens %d %q and %d %q have the same score: llama.cpp merges them leftmost first, which a tokenizer.json cannot say",
				m.Vocab[a], a, m.Vocab[b], b)
		}
	}
	m.Merges, m.ranks = merges, nil
	return nil
}

// sameRuns reports whether a and b are runs of one and the same
// character.
func sameRuns(a, b string) bool {
	_, n := utf8.DecodeRuneInString(a)
	c := a[:n]
	return n > 0 && strings.Count(a, c)*n == len(a) && strings.Count(b, c)*n == len(b)
}
