package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// FuzzEncodeDecode checks decode(encode(s)) == s with and without added
// token recognition, and that streaming gives the same text.
func FuzzEncodeDecode(f *testing.F) {
	for _, r := range readRows(f, llama3Rows) {
		f.Add(r.Text)
	}
	tok := llama3(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		for _, ids := range [][]int32{tok.Encode(s), tok.EncodeWithSpecial(s)} {
			if got := tok.Decode(ids); got != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, got)
			}
			if got := streamAll(tok, ids); got != s {
				t.Fatalf("stream of %q gave %q", s, got)
			}
		}
	})
}

// FuzzParse feeds corrupted tokenizer.json files (byte-level and
// SentencePiece-style) to Parse: it must return an error or a working
// tokenizer, never panic.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(tinyPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(bytes.Replace(data, []byte(`"BPE"`), []byte(`"Unigram"`), 1))
	f.Add(bytes.Replace(data, []byte(`"id": 500`), []byte(`"id": -3`), 1))
	f.Add(bytes.Replace(data, []byte(`"content": "<|eot_id|>"`), []byte(`"content": ""`), 1))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 99999999}}}`))
	f.Add([]byte(`null`))
	sp, err := json.Marshal(smallSP())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sp)
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		ids := tok.EncodeWithSpecial("Hello <|eot_id|> wörld 123")
		_ = tok.Decode(ids)
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("id %d outside the vocabulary of %d", id, tok.VocabSize())
			}
		}
	})
}

// FuzzSentencePiece checks the Mistral tokenizer: Decode(Encode(s)) is s
// with "▁" read as a space (the dummy prefix the normalizer adds is what
// the decoder strips), cutting pieces into words changes no id, both
// encodings stay in the vocabulary, and the stream decoder gives Decode's
// text for every prefix of the ids, in chunks of whole characters.
func FuzzSentencePiece(f *testing.F) {
	for _, r := range readGolden(f, mistralRows, 454) {
		f.Add(r.Text)
	}
	tok := mistral(f)
	// whole encodes each piece as one BPE word, as Hugging Face does,
	// without the cut into words that cutWords allows.
	whole, err := Load(mistralPath)
	if err != nil {
		f.Fatal(err)
	}
	if !whole.sp.cutWords {
		f.Fatal("the Mistral vocabulary should allow cutting words")
	}
	whole.sp.cutWords = false
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > 200 {
			t.Skip()
		}
		if got, want := tok.Decode(tok.Encode(s)), strings.ReplaceAll(s, "▁", " "); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		if got, want := tok.EncodeWithSpecial(s), whole.EncodeWithSpecial(s); !slices.Equal(got, want) {
			t.Fatalf("%q: cut into words %v, as one word %v", s, got, want)
		}
		for _, ids := range [][]int32{tok.Encode(s), tok.EncodeWithSpecial(s)} {
			checkStream(t, tok, ids)
		}
	})
}

// FuzzQwen3 checks the Qwen3 tokenizer: Decode(Encode(s)) is the NFC form
// of s, with and without added-token recognition, and streaming agrees.
func FuzzQwen3(f *testing.F) {
	for _, r := range readGolden(f, qwen3Rows, 437) {
		f.Add(r.Text)
	}
	tok := qwen3(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > 200 {
			t.Skip()
		}
		want := norm.NFC.String(s)
		for _, ids := range [][]int32{tok.Encode(s), tok.EncodeWithSpecial(s)} {
			// Each piece between added tokens is normalized on its own,
			// so only the NFC of the decode must equal NFC(s).
			if got := tok.Decode(ids); norm.NFC.String(got) != want {
				t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
			}
			checkStream(t, tok, ids)
		}
	})
}

// checkStream checks that every chunk of the stream decoder is valid
// UTF-8 and that for every prefix of ids the chunks plus Flush equal
// Decode of the prefix.
func checkStream(t *testing.T, tok *Tokenizer, ids []int32) {
	t.Helper()
	for _, id := range ids {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("id %d outside the vocabulary of %d", id, tok.VocabSize())
		}
	}
	d := tok.NewStreamDecoder()
	var got strings.Builder
	for k, id := range ids {
		chunk := d.Add(id)
		if !utf8.ValidString(chunk) {
			t.Fatalf("chunk %d of %v is not valid UTF-8: %q", k, ids, chunk)
		}
		got.WriteString(chunk)
		if all, want := got.String()+streamFlushCopy(tok, ids[:k+1]), tok.Decode(ids[:k+1]); all != want {
			t.Fatalf("prefix %v streams to %q, Decode gives %q", ids[:k+1], all, want)
		}
	}
}

// streamFlushCopy is what a stream decoder fed ids would still return on
// Flush.
func streamFlushCopy(tok *Tokenizer, ids []int32) string {
	d := tok.NewStreamDecoder()
	for _, id := range ids {
		d.Add(id)
	}
	return d.Flush()
}

// FuzzQwenSplit compares the hand-written Qwen and Llama 3 pre-splits with
// the regexes they implement, run by regexp2 (a backtracking engine with
// lookahead and Unicode classes, as Hugging Face's Oniguruma).
func FuzzQwenSplit(f *testing.F) {
	for _, r := range readGolden(f, qwen3Rows, 437) {
		f.Add(r.Text)
	}
	res := []struct {
		re    *regexp2.Regexp
		split splitter
	}{
		{regexp2.MustCompile(foldContractions(qwenPattern), regexp2.Unicode), splitQwen},
		{regexp2.MustCompile(foldContractions(llama3Pattern), regexp2.Unicode), splitLlama3},
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		for _, r := range res {
			var want []string
			m, err := r.re.FindStringMatch(s)
			for ; m != nil && err == nil; m, err = r.re.FindNextMatch(m) {
				want = append(want, m.String())
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pieces(preTokenizer{split: r.split}, s); !slices.Equal(got, want) {
				t.Fatalf("%q: split into %q, the regex gives %q", s, got, want)
			}
		}
	})
}

// foldContractions spells out the (?i:...) group of a split pattern with
// Unicode simple case folding, which Oniguruma, Rust's regex and Python's
// regex use (and the golden rows "it'ſ" and "IT'ſ" follow): regexp2 has
// .NET's case-insensitivity, which does not fold U+017F LATIN SMALL LETTER
// LONG S to s, and so split "'ſſ" differently.
func foldContractions(pattern string) string {
	const group = `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
	if !strings.HasPrefix(pattern, group) {
		panic("the pattern does not start with the contractions: " + pattern)
	}
	return `'[sSſ]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]` + pattern[len(group):]
}
