package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// The tokenizer-only GGUF files of testdata/gguf (make_vocabs.py) and
// llama.cpp's ids for them (make_golden.py).
const ggufDir = "testdata/gguf/"

// ggufVocab reads the tokenizer.ggml.* keys of testdata/gguf/<name>.gguf.gz
// with engine/gguf, as the app reads a model's.
func ggufVocab(tb testing.TB, name string) GGUFVocab {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name+".gguf")
	if err := os.WriteFile(path, readData(tb, ggufDir+name+".gguf.gz"), 0o644); err != nil {
		tb.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m := f.Meta
	must := func(err error) {
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
	}
	v := GGUFVocab{BOS: -1, EOS: -1, EOT: -1, Unknown: -1, Padding: -1}
	var err1, err2, err3 error
	v.Model, err1 = m.String("tokenizer.ggml.model")
	v.Pre, err2 = m.String("tokenizer.ggml.pre")
	v.Tokens, err3 = m.Strings("tokenizer.ggml.tokens")
	must(errors.Join(err1, err2, err3))
	v.Types, err = m.Int32s("tokenizer.ggml.token_type")
	must(err)
	if m.Has("tokenizer.ggml.scores") {
		v.Scores, err = m.Float32s("tokenizer.ggml.scores")
		must(err)
	}
	if m.Has("tokenizer.ggml.merges") {
		v.Merges, err = m.Strings("tokenizer.ggml.merges")
		must(err)
	}
	for key, dst := range map[string]*int32{"bos": &v.BOS, "eos": &v.EOS, "eot": &v.EOT, "unknown": &v.Unknown, "padding": &v.Padding} {
		if key := "tokenizer.ggml." + key + "_token_id"; m.Has(key) {
			id, err := m.Uint(key)
			must(err)
			*dst = int32(id)
		}
	}
	for key, dst := range map[string]**bool{"add_bos_token": &v.AddBOS, "add_eos_token": &v.AddEOS, "add_space_prefix": &v.AddSpacePrefix} {
		if key := "tokenizer.ggml." + key; m.Has(key) {
			b, err := m.Bool(key)
			must(err)
			*dst = &b
		}
	}
	return v
}

// ggufTokenizer builds each GGUF tokenizer once for all tests.
var ggufTokenizer = func() func(testing.TB, string) *Tokenizer {
	var mu sync.Mutex
	built := map[string]*Tokenizer{}
	return func(tb testing.TB, name string) *Tokenizer {
		tb.Helper()
		mu.Lock()
		defer mu.Unlock()
		if tok, ok := built[name]; ok {
			return tok
		}
		var v GGUFVocab
		if base, ok := strings.CutSuffix(name, "-flat"); ok {
			// Every score -1000, as gguf-py's LlamaHfVocab writes them
			// when a model has only a tokenizer.json.
			v = ggufVocab(tb, base)
			for i := range v.Scores {
				v.Scores[i] = -1000
			}
		} else {
			v = ggufVocab(tb, name)
		}
		tok, err := FromGGUF(v, name+".gguf")
		if err != nil {
			tb.Fatal(err)
		}
		built[name] = tok
		return tok
	}
}()

// llamaCppRow is a row of <name>.llamacpp.jsonl.gz: llama_tokenize's ids
// without and with parse_special, and with add_special.
type llamaCppRow struct {
	Text       string  `json:"text"`
	IDs        []int32 `json:"ids"`
	IDsSpecial []int32 `json:"ids_special"`
	IDsAdd     []int32 `json:"ids_add"`
}

func readLlamaCpp(tb testing.TB, name string) []llamaCppRow {
	tb.Helper()
	var rows []llamaCppRow
	for _, line := range readLines(tb, ggufDir+name+".llamacpp.jsonl.gz") {
		var r llamaCppRow
		if err := json.Unmarshal(line, &r); err != nil {
			tb.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != 592 {
		tb.Fatalf("%s: %d rows, want 592", name, len(rows))
	}
	return rows
}

// qwenEOSText is a normal token of Qwen's vocabulary (id 128247) that
// llama.cpp makes a control token because its text is on llama.cpp's
// list of end-of-generation texts (for PaddleOCR): with parse_special it
// matches "</s>" in the text, where Hugging Face and FromGGUF, going by
// the token's type, encode the text.
const qwenEOSText = "</s>"

// TestGGUFLlamaCpp checks the GGUF tokenizers against llama.cpp's ids
// (llama_tokenize of the same file, vocab-only) on 592 texts each: the
// golden texts of all three tokenizer.json files, hard cases (digit
// runs, whitespace runs, line breaks, emoji, CJK, special-token text in
// plain text, leading spaces, bytes SmolLM2 lacks) and the NFC forms.
// Encode is parse_special false, EncodeWithSpecial true, and
// AddSpecialTokens(Encode) add_special true. Where llama.cpp departs from
// the model's own tokenizer, the row says why and what holds instead.
// "mistral-flat" is Mistral's vocabulary with every score equal, where
// llama.cpp merges leftmost first (see spMerges).
func TestGGUFLlamaCpp(t *testing.T) {
	for _, name := range []string{"smollm2", "llama3", "qwen3", "mistral", "mistral-flat"} {
		t.Run(name, func(t *testing.T) {
			tok := ggufTokenizer(t, name)
			rows := readLlamaCpp(t, name)
			byText := make(map[string]llamaCppRow, len(rows))
			for _, r := range rows {
				byText[r.Text] = r
			}
			pass, nfc, eos := 0, 0, 0
			for i, r := range rows {
				want := r
				if name == "qwen3" && !norm.NFC.IsNormalString(r.Text) {
					// Qwen's tokenizer.json normalises to NFC and
					// llama.cpp does not: the ids are llama.cpp's for
					// the NFC form.
					want = byText[norm.NFC.String(r.Text)]
					if want.Text == "" {
						t.Fatalf("row %d %q: no row for its NFC form", i, r.Text)
					}
					nfc++
				}
				if name == "qwen3" && strings.Contains(r.Text, qwenEOSText) {
					// See qwenEOSText: none of these texts holds an
					// added token, so parse_special changes nothing.
					want.IDsSpecial = want.IDs
					eos++
				}
				var errs []string
				check := func(what string, got, want []int32) {
					if !slices.Equal(got, want) {
						errs = append(errs, what+": "+toJSON(got)+", llama.cpp "+toJSON(want))
					}
				}
				check("Encode", tok.Encode(r.Text), want.IDs)
				check("EncodeWithSpecial", tok.EncodeWithSpecial(r.Text), want.IDsSpecial)
				check("AddSpecialTokens", tok.AddSpecialTokens(tok.Encode(r.Text)), want.IDsAdd)
				if len(errs) > 0 {
					t.Errorf("row %d %q:\n\t%s", i, r.Text, strings.Join(errs, "\n\t"))
					continue
				}
				pass++
			}
			t.Logf("%d/%d rows as llama.cpp (%d compared in NFC, %d with %q as text)", pass, len(rows), nfc, eos, qwenEOSText)
		})
	}
}

// TestGGUFMatchesJSON: the tokenizer built from a GGUF file that
// convert_hf_to_gguf.py's way made from a tokenizer.json gives the ids
// Load gives for that tokenizer.json, on every text, and the same token
// bytes, special flags and decodes: two readers, one engine. The GGUF
// vocabulary of Qwen3 is padded to the model's 151,936 rows, and six of
// its added tokens not marked special in tokenizer.json ("<|fim_prefix|>"
// and the like) are control tokens in the GGUF file, because
// convert_hf_to_gguf.py makes every "<|...|>" token one: Encode leaves
// those to the pre-tokenizer, as llama.cpp does.
func TestGGUFMatchesJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		json func(testing.TB) *Tokenizer
		size int // the GGUF vocabulary's
	}{
		{"llama3", llama3, 128256},
		{"qwen3", qwen3, 151936},
		{"mistral", mistral, 32000},
	} {
		t.Run(c.name, func(t *testing.T) {
			fromJSON, fromGGUF := c.json(t), ggufTokenizer(t, c.name)
			if got := fromGGUF.VocabSize(); got != c.size {
				t.Errorf("VocabSize %d, want %d", got, c.size)
			}
			controlInGGUF := map[string]bool{}
			for id := range int32(fromJSON.VocabSize()) {
				if got, want := fromGGUF.TokenBytes(id), fromJSON.TokenBytes(id); !slices.Equal(got, want) {
					t.Errorf("TokenBytes(%d) = %q, tokenizer.json %q", id, got, want)
				}
				if got, want := fromGGUF.IsSpecial(id), fromJSON.IsSpecial(id); got != want {
					if text := string(fromJSON.TokenBytes(id)); got && strings.HasPrefix(text, "<|") && strings.HasSuffix(text, "|>") {
						controlInGGUF[text] = true
						continue
					}
					t.Errorf("IsSpecial(%d) = %v, tokenizer.json %v", id, got, want)
				}
			}
			if want := map[string]bool{"qwen3": true}[c.name]; (len(controlInGGUF) == 6) != want || (!want && len(controlInGGUF) > 0) {
				t.Errorf("tokens special only in the GGUF file: %v", controlInGGUF)
			}
			rows := readLlamaCpp(t, c.name)
			same := 0
			for i, r := range rows {
				var errs []string
				check := func(what string, got, want []int32) {
					if !slices.Equal(got, want) {
						errs = append(errs, what+": "+toJSON(got)+", tokenizer.json "+toJSON(want))
					}
				}
				special := fromJSON.EncodeWithSpecial(r.Text)
				check("EncodeWithSpecial", fromGGUF.EncodeWithSpecial(r.Text), special)
				plain := fromGGUF.Encode(r.Text)
				if !containsAny(r.Text, controlInGGUF) {
					check("Encode", plain, fromJSON.Encode(r.Text))
				}
				check("AddSpecialTokens", fromGGUF.AddSpecialTokens(plain), fromJSON.AddSpecialTokens(plain))
				if got, want := fromGGUF.Decode(special), fromJSON.Decode(special); got != want {
					errs = append(errs, "Decode: "+toJSON(got)+", tokenizer.json "+toJSON(want))
				}
				if len(errs) > 0 {
					t.Errorf("row %d %q:\n\t%s", i, r.Text, strings.Join(errs, "\n\t"))
					continue
				}
				same++
			}
			t.Logf("%d/%d texts give the same ids from both files", same, len(rows))
		})
	}
}

func containsAny(s string, set map[string]bool) bool {
	for x := range set {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
