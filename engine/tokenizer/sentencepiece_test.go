package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// smallSP returns a SentencePiece-style tokenizer.json, decoded for
// editing, in the legacy layout of Llama 2 and Mistral: <unk> <s> </s>, the
// 256 byte tokens, then "▁", a few letters and merges building "▁ab",
// "ab" and "▁▁".
func smallSP() map[string]any {
	vocab := map[string]any{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	for i, s := range []string{"▁", "a", "b", "ab", "▁ab", "▁▁", "é"} {
		vocab[s] = 259 + i
	}
	str := func(s string) map[string]any { return map[string]any{"String": s} }
	return map[string]any{
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<unk>", "special": true},
			map[string]any{"id": 1, "content": "<s>", "special": true},
			map[string]any{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": str(" "), "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []any{1}}},
		},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": str("▁"), "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{"a b", "▁ ab", "▁ ▁"},
			"byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>"},
	}
}

// metaspace puts the newer layout's Metaspace pre-tokenizer in place of
// the normalizer.
func metaspaceSP(scheme string, split bool) map[string]any {
	m := smallSP()
	m["normalizer"] = nil
	m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}
	return m
}

func TestSentencePieceShapes(t *testing.T) {
	noPrepend := smallSP()
	noPrepend["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
	noStrip := smallSP()
	decoders := noStrip["decoder"].(map[string]any)["decoders"].([]any)
	noStrip["decoder"].(map[string]any)["decoders"] = decoders[:3]
	ignore := smallSP()
	ignore["model"].(map[string]any)["ignore_merges"] = true
	ignore["model"].(map[string]any)["merges"] = []any{"▁ ▁"}
	// A token with "▁" inside forbids cutting pieces at "▁".
	inner := smallSP()
	inner["model"].(map[string]any)["vocab"].(map[string]any)["a▁"] = 266
	inner["model"].(map[string]any)["merges"] = []any{"a b", "▁ ab", "▁ ▁", "a ▁"}
	cases := []struct {
		name   string
		file   map[string]any
		text   string
		ids    []int32 // EncodeWithSpecial
		decode string  // Decode(ids)
	}{
		{"legacy", smallSP(), "ab b", []int32{263, 259, 261}, "ab b"},
		// Each piece after an added token gets its own dummy prefix.
		{"legacy after <s>", smallSP(), "ab<s>ab", []int32{263, 1, 263}, "ab<s> ab"},
		{"legacy leading spaces", smallSP(), "  ab", []int32{264, 263}, "  ab"},
		{"byte fallback", smallSP(), "aé€", []int32{259, 260, 265, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}, "aé€"},
		{"no prepend", noPrepend, "ab ab", []int32{262, 263}, "ab ab"},
		{"no strip", noStrip, "ab", []int32{263}, " ab"},
		// ignore_merges takes a word that is a token whole.
		{"ignore_merges", ignore, "ab", []int32{263}, "ab"},
		{"inner ▁", inner, "a b", []int32{259, 266, 261}, "a b"},
		{"metaspace first", metaspaceSP("first", false), "ab<s>ab", []int32{263, 1, 262}, "ab<s>ab"},
		{"metaspace always", metaspaceSP("always", false), "ab<s>ab", []int32{263, 1, 263}, "ab<s> ab"},
		{"metaspace never", metaspaceSP("never", false), "ab ab", []int32{262, 263}, "ab ab"},
		// A piece already starting with "▁" gets no second one.
		{"metaspace first space", metaspaceSP("first", false), " ab", []int32{263}, "ab"},
		// With split, "▁▁" cannot form: each "▁" starts a word.
		{"metaspace split", metaspaceSP("first", true), "a  b", []int32{259, 260, 259, 259, 261}, "a  b"},
		{"metaspace no split", metaspaceSP("first", false), "a  b", []int32{259, 260, 264, 261}, "a  b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := parseEdited(t, c.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.EncodeWithSpecial(c.text); !slices.Equal(got, c.ids) {
				t.Errorf("EncodeWithSpecial(%q) = %v, want %v", c.text, got, c.ids)
			}
			if got := tok.Decode(c.ids); got != c.decode {
				t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.decode)
			}
		})
	}
}

func TestSentencePieceRefusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"no byte fallback", func(m map[string]any) { m["model"].(map[string]any)["byte_fallback"] = false },
			"unsupported BPE model without byte_fallback"},
		{"missing byte token", func(m map[string]any) { delete(m["model"].(map[string]any)["vocab"].(map[string]any), "<0x41>") },
			`vocabulary lacks the byte-fallback token "<0x41>" for byte 0x41`},
		{"dropout", func(m map[string]any) { m["model"].(map[string]any)["dropout"] = 0.1 }, "unsupported BPE model with dropout"},
		{"lowercase", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Lowercase"} },
			"unsupported normalizer Lowercase for SentencePiece-style BPE"},
		{"replace other", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": "\t"}, "content": "▁"}
		}, `unsupported normalizer Replace("\t" → "▁")`},
		{"byte-level pre-tokenizer", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "ByteLevel"} },
			"unsupported pre_tokenizer ByteLevel(use_regex=true, add_prefix_space=false) for SentencePiece-style BPE"},
		{"metaspace replacement", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "_"}
		}, "unsupported pre_tokenizer Metaspace for SentencePiece-style BPE"},
		{"prepend scheme", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}
		}, `unsupported pre_tokenizer Metaspace with prepend_scheme "sometimes"`},
		{"decoder without fuse", func(m map[string]any) {
			d := m["decoder"].(map[string]any)
			d["decoders"] = slices.Delete(d["decoders"].([]any), 2, 3)
		}, "unsupported decoder Sequence[Replace, ByteFallback, Strip]"},
		{"strip at the end", func(m map[string]any) {
			d := m["decoder"].(map[string]any)["decoders"].([]any)
			d[3].(map[string]any)["stop"] = 1
		}, "unsupported decoder Sequence[Replace, ByteFallback, Fuse, Strip]"},
		{"metaspace decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "Metaspace"} }, "unsupported decoder Metaspace"},
		{"normalized added token", func(m map[string]any) {
			m["added_tokens"].([]any)[1].(map[string]any)["normalized"] = true
		}, `added token "<s>" is normalized, which is not supported with a normalizer`},
		{"roberta post-processor", func(m map[string]any) { m["post_processor"] = map[string]any{"type": "RobertaProcessing"} },
			"unsupported post_processor RobertaProcessing"},
		{"template without the token", func(m map[string]any) {
			m["post_processor"].(map[string]any)["special_tokens"] = map[string]any{}
		}, `the template uses "<s>", which special_tokens does not define`},
		{"template without the sequence", func(m map[string]any) {
			p := m["post_processor"].(map[string]any)
			p["single"] = p["single"].([]any)[:1]
		}, "TemplateProcessing single template without the sequence"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := smallSP()
			c.edit(m)
			_, err := parseEdited(t, m)
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "tokenizer edited.json: ") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q, want it to name the file and contain %q", msg, c.want)
			}
		})
	}
}

// TestSentencePieceVocabulary checks what TokenBytes hands to controllers
// for the Mistral vocabulary, and TokenID's reverse lookup.
func TestSentencePieceVocabulary(t *testing.T) {
	tok := mistral(t)
	for _, c := range []struct {
		id   int32
		want string
	}{
		{28705, " "},      // ▁
		{259, "  "},       // ▁▁
		{22557, " Hello"}, // ▁Hello
		{3 + 0x41, "A"},   // <0x41>
		{3 + 0x0A, "\n"},  // <0x0A>
		{3 + 0xF0, "\xf0"},
		{1, "<s>"},
		{2, "</s>"},
	} {
		if got := string(tok.TokenBytes(c.id)); got != c.want {
			t.Errorf("TokenBytes(%d) = %q, want %q", c.id, got, c.want)
		}
	}
	// Of the tokens with the same bytes the lowest id is found: <0x20>
	// before ▁, <0x41> before A.
	for text, want := range map[string]int32{" Hello": 22557, " ": 3 + 0x20, "A": 3 + 0x41, "</s>": 2} {
		if id, ok := tok.TokenID(text); !ok || id != want {
			t.Errorf("TokenID(%q) = %d %v, want %d", text, id, ok, want)
		}
	}
	if _, ok := tok.TokenID("▁Hello"); ok {
		t.Error("TokenID found the vocabulary string ▁Hello; it takes bytes")
	}
}

// TestSentencePieceStream: a run of byte tokens is held back until a
// token of another kind ends it, and the leading space goes once.
func TestSentencePieceStream(t *testing.T) {
	tok := mistral(t)
	d := tok.NewStreamDecoder()
	steps := []struct {
		id   int32
		want string
	}{
		{28705, ""},        // ▁: the stripped leading space
		{3 + 0xE4, ""},     // 中 = E4 B8 AD, held back
		{3 + 0xB8, ""},     //
		{3 + 0xAD, ""},     //
		{22557, "中 Hello"}, // ▁Hello ends the run
		{3 + 0xFF, ""},     // an invalid run
	}
	for i, s := range steps {
		if got := d.Add(s.id); got != s.want {
			t.Errorf("step %d: Add(%d) = %q, want %q", i, s.id, got, s.want)
		}
	}
	if got := d.Flush(); got != "\uFFFD" {
		t.Errorf("Flush = %q, want U+FFFD", got)
	}
	d.Reset()
	if got := d.Add(22557); got != "Hello" {
		t.Errorf("after Reset, Add(▁Hello) = %q, want the space stripped again", got)
	}
}

func TestAddSpecialTokens(t *testing.T) {
	ids := []int32{5, 6}
	for _, c := range []struct {
		name string
		tok  *Tokenizer
		want []int32
	}{
		{"Llama 3", llama3(t), []int32{128000, 5, 6}},
		{"Mistral", mistral(t), []int32{1, 5, 6}},
		{"Qwen3", qwen3(t), []int32{5, 6}},
	} {
		if got := c.tok.AddSpecialTokens(ids); !slices.Equal(got, c.want) {
			t.Errorf("%s: AddSpecialTokens = %v, want %v", c.name, got, c.want)
		}
	}
}
