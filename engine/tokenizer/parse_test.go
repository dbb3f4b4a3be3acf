package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyJSON returns the tiny tokenizer.json decoded, for editing.
func tinyJSON(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func parseEdited(t *testing.T, m map[string]any) (*Tokenizer, error) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(data, "edited.json")
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unigram", func(m map[string]any) {
			m["model"] = map[string]any{"type": "Unigram", "vocab": []any{[]any{"a", 0.0}}}
		}, `unsupported model type "Unigram"`},
		{"wordpiece", func(m map[string]any) { m["model"].(map[string]any)["type"] = "WordPiece" }, `unsupported model type "WordPiece"`},
		{"no model", func(m map[string]any) { delete(m, "model") }, "no model"},
		{"metaspace", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁"}
		}, "unsupported pre_tokenizer Metaspace"},
		{"other regex", func(m map[string]any) {
			pre := m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)
			pre["pattern"] = map[string]any{"Regex": `\w+`}
		}, `unsupported pre_tokenizer Sequence[Split(Regex "\\w+"), ByteLevel(use_regex=false, add_prefix_space=false)]`},
		{"prefix space", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
		}, "unsupported pre_tokenizer ByteLevel(use_regex=true, add_prefix_space=true)"},
		{"no pre_tokenizer", func(m map[string]any) { m["pre_tokenizer"] = nil }, "no pre_tokenizer"},
		{"normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFKC"} }, "unsupported normalizer NFKC for byte-level BPE"},
		{"byte fallback", func(m map[string]any) { m["model"].(map[string]any)["byte_fallback"] = true }, "byte_fallback"},
		{"decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "Metaspace"} }, "unsupported decoder Metaspace"},
		{"bad merge", func(m map[string]any) {
			model := m["model"].(map[string]any)
			model["merges"] = append(model["merges"].([]any), "Ġ zzzz")
		}, `merge 244 ("Ġ" "zzzz") uses or makes a token not in the vocabulary`},
		{"merge without space", func(m map[string]any) { m["model"].(map[string]any)["merges"] = []any{"ab"} }, `merge 0 "ab" is not two tokens`},
		{"huge id", func(m map[string]any) {
			m["added_tokens"] = []any{map[string]any{"id": 1 << 30, "content": "<x>"}}
		}, `added token "<x>" has id 1073741824`},
		{"single word", func(m map[string]any) {
			m["added_tokens"] = []any{map[string]any{"id": 500, "content": "<x>", "single_word": true}}
		}, `added token "<x>" uses single_word`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := tinyJSON(t)
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

func TestLoadErrors(t *testing.T) {
	if _, err := Parse([]byte(`{"model": `), "broken.json"); err == nil || !strings.Contains(err.Error(), "tokenizer broken.json: invalid JSON") {
		t.Errorf("truncated JSON: %v", err)
	}
	if _, err := Load("testdata-does-not-exist/tokenizer.json"); err == nil {
		t.Error("missing file: no error")
	}
	dir := t.TempDir()
	path := dir + "/tokenizer.json.gz"
	if err := os.WriteFile(path, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("bad gzip: %v", err)
	}
}

func TestLoadBoundsTheSize(t *testing.T) {
	// A tokenizer.json pointed at /dev/zero or a huge file grew the
	// memory until the machine ran out; a 300 MB one was refused only
	// after reading it all.
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(65 << 20) // sparse
	f.Close()
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+" is larger than 64 MiB") {
		t.Errorf("oversized file: %v", err)
	}
	// A small gzip file that expands past the limit is stopped at it.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	if _, err := gunzip(bomb.Bytes(), 1000); err == nil || !strings.Contains(err.Error(), "decompresses to more than 1000 bytes") {
		t.Errorf("gzip bomb: %v", err)
	}
}

func pieces(p preTokenizer, s string) []string {
	var out []string
	p.each(s, func(piece string) { out = append(out, piece) })
	return out
}

func TestPreTokenizers(t *testing.T) {
	cases := []struct {
		pre  preTokenizer
		text string
		want []string
	}{
		{preTokenizer{split: splitLlama3}, "Hello world's 1234  foo\n\n bar\tbaz!!\n",
			[]string{"Hello", " world", "'s", " ", "123", "4", " ", " foo", "\n\n", " bar", "\tbaz", "!!\n"}},
		{preTokenizer{split: splitLlama3}, "DON'T ſ x'ſ  ", []string{"DON", "'T", " ſ", " x", "'ſ", "  "}},
		{preTokenizer{split: splitQwen}, "Hello world's 1234  foo\n٣٤",
			[]string{"Hello", " world", "'s", " ", "1", "2", "3", "4", " ", " foo", "\n", "٣", "٤"}},
		{preTokenizer{split: splitQwen, nfc: true}, "e\u0301\u212b", []string{"éÅ"}},
		{preTokenizer{split: splitGPT2}, "Hello world's 1234  foo\n\n bar DON'T",
			[]string{"Hello", " world", "'s", " 1234", " ", " foo", "\n\n", " bar", " DON", "'", "T"}},
		{preTokenizer{split: splitGPT2, digits: digitsIndividual}, "abc 123x",
			[]string{"abc", " ", "1", "2", "3", "x"}},
		{preTokenizer{split: splitGPT2, digits: digitsContiguous}, "abc 123x٣",
			[]string{"abc", " ", "123", "x", "٣"}},
	}
	for _, c := range cases {
		if got := pieces(c.pre, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.text, got, c.want)
		}
	}
}

// TestSupportedShapes loads the tiny vocabulary under each supported
// pre-tokenizer and checks that encoding round-trips.
func TestSupportedShapes(t *testing.T) {
	shapes := []any{
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Digits", "individual_digits": true},
			map[string]any{"type": "ByteLevel", "use_regex": true},
		}},
		map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": gpt2Pattern}, "behavior": "Isolated"},
			map[string]any{"type": "ByteLevel", "use_regex": false},
		}},
	}
	for i, shape := range shapes {
		m := tinyJSON(t)
		m["pre_tokenizer"] = shape
		m["model"].(map[string]any)["merges"] = mergePairs(m["model"].(map[string]any)["merges"].([]any))
		tok, err := parseEdited(t, m)
		if err != nil {
			t.Fatalf("shape %d: %v", i, err)
		}
		s := "The 42 robots' café,\n  said: <|eot_id|> hi"
		if got := tok.Decode(tok.Encode(s)); got != s {
			t.Errorf("shape %d: round trip gave %q", i, got)
		}
	}
}

// mergePairs rewrites "a b" merges in the newer ["a", "b"] form.
func mergePairs(merges []any) []any {
	out := make([]any, len(merges))
	for i, m := range merges {
		l, r, _ := strings.Cut(m.(string), " ")
		out[i] = []any{l, r}
	}
	return out
}

func TestAddedTokenStrip(t *testing.T) {
	m := tinyJSON(t)
	for _, a := range m["added_tokens"].([]any) {
		a := a.(map[string]any)
		if a["content"] == "<|eot_id|>" {
			a["lstrip"], a["rstrip"] = true, true
		}
		if a["content"] == "<|python_tag|>" {
			a["special"] = false
		}
	}
	tok, err := parseEdited(t, m)
	if err != nil {
		t.Fatal(err)
	}
	a := tok.Encode("a")
	if got, want := tok.EncodeWithSpecial("a \t<|eot_id|>\n a"), slices.Concat(a, []int32{509}, a); !slices.Equal(got, want) {
		t.Errorf("lstrip/rstrip: %v, want %v", got, want)
	}
	// A non-special added token is recognised even by Encode.
	if got, want := tok.Encode("a<|python_tag|>a"), slices.Concat(a, []int32{510}, a); !slices.Equal(got, want) {
		t.Errorf("non-special added token: %v, want %v", got, want)
	}
	if tok.IsSpecial(510) || !tok.IsSpecial(509) {
		t.Error("special flags wrong")
	}
}

// TestMissingByte: a byte-level vocabulary may lack byte tokens
// (SmolLM2's lacks 0x04 and others). Hugging Face drops such a byte
// before the merges, so the tokens on either side of it may merge; the
// ids are those of tokenizers 0.23.3 for this edit of the tiny file.
func TestMissingByte(t *testing.T) {
	m := tinyJSON(t)
	model := m["model"].(map[string]any)
	vocab := model["vocab"].(map[string]any)
	delete(vocab, "Ą") // byte 0x04
	vocab["!!"] = 512
	model["merges"] = append(model["merges"].([]any), "! !")
	tok, err := parseEdited(t, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"!\x04!", []int32{512}},
		{"\x04", nil},
		{"a\x04", []int32{64}},
		{"\x04\x04!!", []int32{512}},
	} {
		if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
