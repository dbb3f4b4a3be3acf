package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// smallGGUF is a byte-level vocabulary: the 256 byte tokens, a few
// merged ones, a token no merge makes ("xyz"), a control and a
// user-defined token.
func smallGGUF() GGUFVocab {
	v := GGUFVocab{Model: "gpt2", Pre: "gpt-2", BOS: -1, EOS: -1, EOT: -1, Unknown: -1, Padding: -1}
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(byteToRune[b]))
		v.Types = append(v.Types, TokenNormal)
	}
	for _, s := range []string{"12", "Ġa", "ab", "Ġab", "Ã©", "xyz", "<|eot|>", "<think>"} {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TokenNormal)
	}
	v.Types[262], v.Types[263] = TokenControl, TokenUserDefined
	v.Merges = []string{"1 2", "Ġ a", "a b", "Ġa b", "Ã ©"}
	return v
}

// smallSPM is a SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte
// tokens, then pieces with scores.
func smallSPM() GGUFVocab {
	v := GGUFVocab{Model: "llama", Pre: "default", BOS: 1, EOS: 2, EOT: -1, Unknown: 0, Padding: -1}
	v.Tokens = []string{"<unk>", "<s>", "</s>"}
	v.Types = []int32{TokenUnknown, TokenControl, TokenControl}
	v.Scores = []float32{0, 0, 0}
	for b := range 256 {
		v.Tokens = append(v.Tokens, fmt.Sprintf("<0x%02X>", b))
		v.Types = append(v.Types, TokenByte)
		v.Scores = append(v.Scores, 0)
	}
	// "bc" before "ab": its id is lower.
	for i, s := range []string{"▁", "a", "b", "c", "bc", "ab", "▁a", "▁ab"} {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TokenNormal)
		v.Scores = append(v.Scores, -float32(i))
	}
	return v
}

// id is the id of a token of v.
func (v GGUFVocab) id(tb testing.TB, s string) int32 {
	tb.Helper()
	i := slices.Index(v.Tokens, s)
	if i < 0 {
		tb.Fatalf("no token %q", s)
	}
	return int32(i)
}

func ids(v GGUFVocab, tb testing.TB, tokens ...string) []int32 {
	out := make([]int32, len(tokens))
	for i, s := range tokens {
		out[i] = v.id(tb, s)
	}
	return out
}

func boolp(b bool) *bool { return &b }

func TestFromGGUFByteLevel(t *testing.T) {
	cases := []struct {
		reason string
		pre    string
		text   string
		want   []string // tokens of Encode
		bos    bool     // AddSpecialTokens adds the BOS
	}{
		{"GPT-2 keeps a run of digits in one piece", "gpt-2", "a12", []string{"a", "12"}, false},
		{"the Llama 3 split takes up to three digits", "llama-bpe", "a12", []string{"a", "12"}, true},
		{"Llama 3 takes a piece that is a token whole (ignore_merges)", "llama-bpe", "xyz", []string{"xyz"}, true},
		{"DBRX has the Llama 3 split but applies the merges", "dbrx", "xyz", []string{"x", "y", "z"}, false},
		{"Qwen cuts every digit", "qwen2", "a12", []string{"a", "1", "2"}, false},
		{"Qwen normalises to NFC: e + U+0301 is é", "qwen2", "e\u0301", []string{"Ã©"}, false},
		{"GPT-2 does not normalise", "gpt-2", "e\u0301", []string{"e", "Ì", "ģ"}, false},
		{"SmolLM cuts every digit before the GPT-2 split", "smollm", "a12", []string{"a", "1", "2"}, false},
		{"StarCoder too", "starcoder", " 12", []string{"Ġ", "1", "2"}, false},
		{"a user-defined token is found in plain text", "gpt-2", "a<think>", []string{"a", "<think>"}, false},
		{"a control token is not", "gpt-2", "<|eot|>", []string{"<", "|", "e", "o", "t", "|", ">"}, false},
	}
	for _, c := range cases {
		v := smallGGUF()
		v.Pre, v.BOS = c.pre, v.id(t, "<|eot|>")
		tok, err := FromGGUF(v, "small.gguf")
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		want := ids(v, t, c.want...)
		if got := tok.Encode(c.text); !slices.Equal(got, want) {
			t.Errorf("%s: %s Encode(%q) = %v, want %v", c.reason, c.pre, c.text, got, want)
		}
		if got := tok.AddSpecialTokens(nil); len(got) > 0 != c.bos {
			t.Errorf("%s: %s AddSpecialTokens(nil) = %v, want the BOS %v", c.reason, c.pre, got, c.bos)
		}
	}
}

func TestFromGGUFSpecialTokens(t *testing.T) {
	v := smallGGUF()
	v.BOS, v.EOS, v.AddBOS, v.AddEOS = v.id(t, "<|eot|>"), v.id(t, "<think>"), boolp(true), boolp(true)
	tok, err := FromGGUF(v, "small.gguf")
	if err != nil {
		t.Fatal(err)
	}
	eot, think := v.id(t, "<|eot|>"), v.id(t, "<think>")
	if got := tok.EncodeWithSpecial("<|eot|><think>"); !slices.Equal(got, []int32{eot, think}) {
		t.Errorf("EncodeWithSpecial finds both added tokens: got %v", got)
	}
	if !tok.IsSpecial(eot) || tok.IsSpecial(think) {
		t.Errorf("IsSpecial: control %v, user-defined %v; want true, false", tok.IsSpecial(eot), tok.IsSpecial(think))
	}
	if got := tok.AddSpecialTokens([]int32{7}); !slices.Equal(got, []int32{eot, 7, think}) {
		t.Errorf("add_bos_token and add_eos_token: AddSpecialTokens = %v", got)
	}
	if got := tok.AddedTokens(); !slices.Equal(got, []string{"<|eot|>", "<think>"}) {
		t.Errorf("AddedTokens = %q", got)
	}
}

func TestFromGGUFSentencePiece(t *testing.T) {
	cases := []struct {
		reason string
		edit   func(v *GGUFVocab)
		text   string
		want   []string
	}{
		{"the dummy prefix, then the pair whose token scores highest: ab (-5) before ▁a (-6)", nil, "ab", []string{"▁ab"}},
		{"bc scoring higher than ab merges first", func(v *GGUFVocab) {
			v.Scores[v.id(t, "bc")] = 5
		}, "abc", []string{"▁a", "bc"}},
		{"of equal scores the leftmost merges first, as llama.cpp, though bc's id is lower", func(v *GGUFVocab) {
			v.Scores[v.id(t, "ab")], v.Scores[v.id(t, "bc")] = 5, 5
		}, "abc", []string{"▁ab", "c"}},
		{"a character not in the vocabulary is its bytes", nil, "é", []string{"▁", "<0xC3>", "<0xA9>"}},
		{"no prefix when add_space_prefix is false", func(v *GGUFVocab) { v.AddSpacePrefix = boolp(false) }, "ab", []string{"ab"}},
		{"control text is text in plain encoding", nil, "<s>", []string{"▁", "<0x3C>", "<0x73>", "<0x3E>"}},
		{"a control token's text does not take part in merges", func(v *GGUFVocab) {
			v.Tokens = append(v.Tokens, "bcab")
			v.Types = append(v.Types, TokenControl)
			v.Scores = append(v.Scores, 100)
		}, "bcab", []string{"▁", "bc", "ab"}},
	}
	for _, c := range cases {
		v := smallSPM()
		if c.edit != nil {
			c.edit(&v)
		}
		tok, err := FromGGUF(v, "small.gguf")
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		want := ids(v, t, c.want...)
		if got := tok.Encode(c.text); !slices.Equal(got, want) {
			t.Errorf("%s: Encode(%q) = %v, want %v", c.reason, c.text, got, want)
		}
		if got := tok.Decode(want); got != c.text {
			t.Errorf("%s: Decode(%v) = %q, want %q", c.reason, want, got, c.text)
		}
	}
	v := smallSPM()
	v.BOS = -1
	tok, err := FromGGUF(v, "small.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.AddSpecialTokens(nil); !slices.Equal(got, []int32{1}) {
		t.Errorf("without bos_token_id and add_bos_token, llama.cpp's BOS 1 is added: got %v", got)
	}
	if got := tok.EncodeWithSpecial("<unk><s>"); !slices.Equal(got, []int32{0, 1}) {
		t.Errorf("unknown and control tokens are special tokens: got %v", got)
	}
}

func TestFromGGUFErrors(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		reason string
		base   func() GGUFVocab
		edit   func(v *GGUFVocab)
		want   string
	}{
		{"no tokens", smallGGUF, func(v *GGUFVocab) { v.Tokens, v.Types = nil, nil }, "tokenizer.ggml.tokens is missing or empty"},
		{"no types", smallGGUF, func(v *GGUFVocab) { v.Types = nil }, "tokenizer.ggml.token_type is missing"},
		{"types and tokens differ in length", smallGGUF, func(v *GGUFVocab) { v.Types = v.Types[:3] }, "tokenizer.ggml.token_type has 3 entries for 264 tokens"},
		{"a type GGUF does not define", smallGGUF, func(v *GGUFVocab) { v.Types[5] = 9 }, `tokenizer.ggml.token_type: token 5 "ą" has type 9, not one of 0-6`},
		{"a token twice", smallGGUF, func(v *GGUFVocab) { v.Tokens[261] = "ab" }, `tokenizer.ggml.tokens: token 261 "ab" repeats token 258`},
		{"an added token twice", smallGGUF, func(v *GGUFVocab) { v.Tokens[263] = "<|eot|>" }, `tokenizer.ggml.tokens: token 263 "<|eot|>" repeats token 262`},
		{"another model", smallGGUF, func(v *GGUFVocab) { v.Model = "bert" }, `tokenizer.ggml.model "bert" is not supported (supported: gpt2, byte-level BPE; llama, SentencePiece)`},
		{"no model", smallGGUF, func(v *GGUFVocab) { v.Model = "" }, "tokenizer.ggml.model is missing"},
		{"a pre-tokenizer this package lacks", smallGGUF, func(v *GGUFVocab) { v.Pre = "default" }, `tokenizer.ggml.pre "default" is not supported (supported: codeshell, dbrx, `},
		{"no pre-tokenizer", smallGGUF, func(v *GGUFVocab) { v.Pre = "" }, "tokenizer.ggml.pre is missing (supported: "},
		{"no merges", smallGGUF, func(v *GGUFVocab) { v.Merges = nil }, "tokenizer.ggml.merges is missing"},
		{"a merge without a space", smallGGUF, func(v *GGUFVocab) { v.Merges[1] = "Ġa" }, `tokenizer.ggml.merges: merge 1 "Ġa" is not two tokens separated by a space`},
		{"a merge of unknown tokens", smallGGUF, func(v *GGUFVocab) { v.Merges[2] = "a zz" }, `tokenizer.ggml.merges: merge 2 "a zz" uses or makes a token not in the vocabulary`},
		{"a merge making an unknown token", smallGGUF, func(v *GGUFVocab) { v.Merges[2] = "b a" }, `merge 2 "b a" uses or makes`},
		{"a BOS outside the vocabulary", smallGGUF, func(v *GGUFVocab) { v.BOS = 264 }, "tokenizer.ggml.bos_token_id 264 is not one of the 264 tokens"},
		{"a negative EOT", smallGGUF, func(v *GGUFVocab) { v.EOT = -5 }, "tokenizer.ggml.eot_token_id -5 is not one of the 264 tokens"},
		{"BOS asked for, none named", smallGGUF, func(v *GGUFVocab) { v.AddBOS = boolp(true) }, "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing"},
		{"EOS asked for, none named", smallGGUF, func(v *GGUFVocab) { v.AddEOS = boolp(true) }, "tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is missing"},
		{"Llama 3 adds a BOS by default", smallGGUF, func(v *GGUFVocab) { v.Pre = "llama-bpe" }, "add_bos_token is true but tokenizer.ggml.bos_token_id is missing"},
		{"no scores", smallSPM, func(v *GGUFVocab) { v.Scores = nil }, "tokenizer.ggml.scores is missing"},
		{"scores and tokens differ in length", smallSPM, func(v *GGUFVocab) { v.Scores = v.Scores[1:] }, "tokenizer.ggml.scores has 266 entries for 267 tokens"},
		{"a NaN score", smallSPM, func(v *GGUFVocab) { v.Scores[264] = nan }, `tokenizer.ggml.scores: token 264 "ab" has score NaN`},
		{"a byte token missing", smallSPM, func(v *GGUFVocab) { v.Types[3+0x41] = TokenNormal; v.Tokens[3+0x41] = "A" }, `vocabulary lacks the byte-fallback token "<0x41>"`},
		{"the default BOS outside a tiny vocabulary", smallSPM, func(v *GGUFVocab) {
			*v = GGUFVocab{Model: "llama", Tokens: []string{"<unk>"}, Types: []int32{TokenUnknown}, Scores: []float32{0}, BOS: -1, EOS: -1, EOT: -1, Unknown: -1, Padding: -1}
		}, "tokenizer.ggml.bos_token_id is missing and llama.cpp's default, 1, is not one of the 1 tokens"},
	}
	for _, c := range cases {
		v := c.base()
		c.edit(&v)
		_, err := FromGGUF(v, "small.gguf")
		if err == nil {
			t.Errorf("%s: no error", c.reason)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "tokenizer small.gguf: ") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q, want it to name the file and contain %q", c.reason, msg, c.want)
		}
	}
}

// TestGGUFMissingByte: a byte-level vocabulary may lack byte tokens
// (SmolLM2's lacks 0x04 and others); as llama.cpp, the byte gives no
// token and the tokens on either side of it do not merge (Hugging Face
// drops it before the merges: see TestMissingByte).
func TestGGUFMissingByte(t *testing.T) {
	v := smallGGUF()
	v.Tokens[4] = "[gone]"
	v.Tokens = append(v.Tokens, "!!")
	v.Types = append(v.Types, TokenNormal)
	v.Merges = append(v.Merges, "! !")
	tok, err := FromGGUF(v, "small.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("!\x04!"), ids(v, t, "!", "!"); !slices.Equal(got, want) {
		t.Errorf("Encode(! 0x04 !) = %v, want %v", got, want)
	}
	if got := tok.Encode("\x04"); len(got) != 0 {
		t.Errorf("Encode(0x04) = %v, want none", got)
	}
}

func TestGGUFFingerprint(t *testing.T) {
	fingerprint := func(v GGUFVocab) string {
		tok, err := FromGGUF(v, "small.gguf")
		if err != nil {
			t.Fatal(err)
		}
		return tok.Fingerprint()
	}
	base := fingerprint(smallGGUF())
	if again := fingerprint(smallGGUF()); again != base || len(base) != 64 {
		t.Fatalf("fingerprints %q and %q of one vocabulary", base, again)
	}
	for _, c := range []struct {
		reason string
		base   func() GGUFVocab
		edit   func(v *GGUFVocab)
	}{
		{"a token's text", smallGGUF, func(v *GGUFVocab) { v.Tokens[261] = "xyw" }},
		{"a token's type", smallGGUF, func(v *GGUFVocab) { v.Types[263] = TokenControl }},
		{"the merges' order", smallGGUF, func(v *GGUFVocab) { v.Merges[0], v.Merges[1] = v.Merges[1], v.Merges[0] }},
		{"the pre-tokenizer", smallGGUF, func(v *GGUFVocab) { v.Pre = "phi-2" }},
		{"a special id", smallGGUF, func(v *GGUFVocab) { v.Padding = 7 }},
		{"add_bos_token given", smallGGUF, func(v *GGUFVocab) { v.AddBOS = boolp(false) }},
		{"a score", smallSPM, func(v *GGUFVocab) { v.Scores[266] = -100 }},
	} {
		before := fingerprint(c.base())
		v := c.base()
		c.edit(&v)
		if fingerprint(v) == before {
			t.Errorf("%s: the fingerprint did not change", c.reason)
		}
	}
}

// FuzzFromGGUF builds random small vocabularies: FromGGUF must return an
// error or a tokenizer whose ids are all in the vocabulary, never panic.
func FuzzFromGGUF(f *testing.F) {
	f.Add(false, uint8(0), "12|Ġa|ab|Ġab|<|eot|>", []byte{1, 1, 1, 1, 3}, "1 2\nĠ a\na b\nĠa b", int32(-1))
	f.Add(false, uint8(3), "x", []byte{7}, "a", int32(300))
	f.Add(true, uint8(0), "▁|a|b|ab|▁ab|<x y>", []byte{1, 1, 1, 1, 1, 4}, "", int32(1))
	f.Add(true, uint8(1), "", []byte{}, "", int32(-1))
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range ggufPreMap {
			if !yield(name) {
				return
			}
		}
	})
	f.Fuzz(func(t *testing.T, spm bool, pre uint8, tokens string, types []byte, merges string, bos int32) {
		v := smallGGUF()
		if spm {
			v = smallSPM()
		}
		v.Pre = names[int(pre)%len(names)]
		extra := strings.Split(tokens, "|")
		for i, s := range extra {
			v.Tokens = append(v.Tokens, s)
			typ := int32(TokenNormal)
			if i < len(types) {
				typ = int32(types[i] % 8)
			}
			v.Types = append(v.Types, typ)
			if spm {
				v.Scores = append(v.Scores, -float32(i%4))
			}
		}
		if merges != "" {
			v.Merges = append(v.Merges, strings.Split(merges, "\n")...)
		}
		v.BOS = bos
		tok, err := FromGGUF(v, "fuzz.gguf")
		if err != nil {
			return
		}
		for _, text := range append(extra, "Hello <|eot|> wörld 123 ab▁a", tokens) {
			for _, got := range [][]int32{tok.Encode(text), tok.EncodeWithSpecial(text), tok.AddSpecialTokens(nil)} {
				for _, id := range got {
					if id < 0 || int(id) >= tok.VocabSize() {
						t.Fatalf("%q: id %d outside the vocabulary of %d", text, id, tok.VocabSize())
					}
				}
				_ = tok.Decode(got)
			}
		}
	})
}
