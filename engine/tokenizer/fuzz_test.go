package tokenizer

import (
	"bytes"
	"os"
	"testing"
	"unicode/utf8"
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

// FuzzParse feeds corrupted tokenizer.json files to Parse: it must return
// an error or a working tokenizer, never panic.
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
