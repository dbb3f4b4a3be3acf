package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// lenCache is a Cache that only has a length and a window.
type lenCache struct {
	Cache
	n, window int
}

func (c *lenCache) Len() int    { return c.n }
func (c *lenCache) Window() int { return c.window }

func TestChecksForward(t *testing.T) {
	m := &Model{Dir: "/models/tiny", Config: &Config{VocabSize: 10, NumHiddenLayers: 1, NumKeyValueHeads: 1, HeadDim: 2, MaxPositionEmbeddings: 8}}
	k := NewChecks("test", m)
	for _, tc := range []struct {
		reason string
		held   int
		tokens []int32
		logits int
		all    bool
		want   string // a substring of the error, "" for none
		full   bool   // a *ContextFullError
	}{
		{reason: "one token, the last token's logits", tokens: []int32{3}, logits: 10},
		{reason: "a prompt, the last token's logits", tokens: []int32{1, 2, 3}, logits: 10},
		{reason: "a prompt, every token's logits", tokens: []int32{1, 2, 3}, logits: 30, all: true},
		{reason: "a buffer of neither size", tokens: []int32{1, 2}, logits: 11, want: "test: logits buffer holds 11 floats, want 10 or 20"},
		{reason: "a token past the vocabulary names config.json", tokens: []int32{10}, logits: 10, want: "test: token id 10 is outside the vocabulary of 10 (vocab_size in /models/tiny/config.json)"},
		{reason: "a negative token id", tokens: []int32{-1}, logits: 10, want: "outside the vocabulary"},
		{reason: "tokens past the window", held: 3, tokens: []int32{1, 2}, logits: 10, want: "context window full: 3 tokens held + 2 new > window of 4", full: true},
		{reason: "tokens that fill the window exactly", held: 2, tokens: []int32{1, 2}, logits: 10},
	} {
		all, err := k.Forward(&lenCache{n: tc.held, window: 4}, tc.tokens, make([]float32, tc.logits))
		var full *ContextFullError
		switch {
		case tc.want == "" && (err != nil || all != tc.all):
			t.Errorf("%s: all %v, err %v; want all %v", tc.reason, all, err, tc.all)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want %q", tc.reason, err, tc.want)
		case tc.full != errors.As(err, &full):
			t.Errorf("%s: err %T, ContextFullError wanted: %v", tc.reason, err, tc.full)
		}
	}
}

func TestChecksImport(t *testing.T) {
	m := &Model{Config: &Config{VocabSize: 10, NumHiddenLayers: 1, NumKeyValueHeads: 1, HeadDim: 2, MaxPositionEmbeddings: 8}}
	k := NewChecks("test", m)
	k32 := NewChecks("test", &Model{Config: &Config{VocabSize: 10, NumHiddenLayers: 1, NumKeyValueHeads: 1, HeadDim: 32, MaxPositionEmbeddings: 8}})
	state := func(n int, dt safetensors.DType) *KVState {
		b := make([]byte, n*2*dt.Size())
		return &KVState{Len: n, KVHeads: 1, HeadDim: 2, DType: dt, K: [][]byte{b}, V: [][]byte{b}}
	}
	// quant is a quantised state of two positions with head_dim 32 and
	// scales of scaleBytes bytes per layer.
	quant := func(bits, group, scaleBytes int) *KVState {
		codes, sc := make([]byte, 2*32*bits/8), make([]byte, scaleBytes)
		one := func(b []byte) [][]byte { return [][]byte{b} }
		return &KVState{Len: 2, KVHeads: 1, HeadDim: 32, DType: safetensors.U32, K: one(codes), V: one(codes),
			Quant: &KVQuant{Group: group, Bits: bits, ScaleDType: safetensors.F16,
				KScales: one(sc), KBiases: one(make([]byte, 4)), VScales: one(make([]byte, 4)), VBiases: one(make([]byte, 4))}}
	}
	for _, tc := range []struct {
		reason string
		s      *KVState
		want   string
	}{
		{"f32 within the window", state(4, safetensors.F32), ""},
		{"bf16 is read by every backend", state(2, safetensors.BF16), ""},
		{"more positions than the cache's window", state(5, safetensors.F32), "test cache: KV state holds 5 positions, the context window is 4"},
		{"a dtype no backend reads", state(1, safetensors.U32), "test cache: KV state has dtype U32; F32, F16 and BF16 are read"},
		{"q8_0 blocks as mlx-lm's 8-bit groups of 32", quant(8, 32, 4), ""},
		{"3-bit codes", quant(3, 32, 4), "3-bit codes; 4 and 8 are read"},
		{"a group wider than a head", quant(8, 64, 4), "groups of 64; 32, 64 or 128 dividing head_dim 32 are read"},
		{"a layer of scales short", quant(8, 32, 3), "layer 0: 3 bytes of key scales, want 4"},
	} {
		kc := k
		if tc.s.HeadDim == 32 {
			kc = k32
		}
		err := kc.Import(&lenCache{window: 4}, tc.s)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.reason, err, tc.want)
		}
	}
}
