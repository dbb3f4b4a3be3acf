package tokenizer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	mistralPath          = "../../testdata/mistral-tokenizer/tokenizer.json.gz"
	mistralRows          = "../../testdata/mistral-tokenizer/tokenize.jsonl.gz"
	mistralDecodes       = "../../testdata/mistral-tokenizer/decode.jsonl.gz"
	mistralDisagreements = "../../testdata/mistral-tokenizer/tokenize_disagreements.json"
	qwen3Path            = "../../testdata/qwen3-tokenizer/tokenizer.json.gz"
	qwen3Rows            = "../../testdata/qwen3-tokenizer/tokenize.jsonl.gz"
	qwen3Disagreements   = "../../testdata/qwen3-tokenizer/tokenize_disagreements.json"
)

// loadOnce loads a tokenizer once for all tests.
func loadOnce(path string) func(testing.TB) *Tokenizer {
	var once sync.Once
	var tok *Tokenizer
	var err error
	return func(tb testing.TB) *Tokenizer {
		tb.Helper()
		once.Do(func() { tok, err = Load(path) })
		if err != nil {
			tb.Fatal(err)
		}
		return tok
	}
}

var (
	mistral = loadOnce(mistralPath)
	qwen3   = loadOnce(qwen3Path)
)

// goldenRow is a row of the Mistral and Qwen3 tokenize.jsonl files; the
// optional fields are given only when they differ from the one before.
type goldenRow struct {
	Text                 string   `json:"text"`
	IDs                  []int32  `json:"ids"`
	IDsSplitSpecial      []int32  `json:"ids_split_special"`
	IDsNoSpecial         []int32  `json:"ids_no_special"`
	DecodesTo            *string  `json:"decodes_to"`
	DecodesToSkipSpecial *string  `json:"decodes_to_skip_special"`
	TokenBytesHex        []string `json:"token_bytes_hex"`
}

func or[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}

func orIDs(ids, def []int32) []int32 {
	if ids == nil {
		return def
	}
	return ids
}

// golden says how a tokenizer's rows are checked.
type golden struct {
	tok *Tokenizer
	// plain gives plain Encode's column (EncodeWithSpecial's is ids).
	plain func(goldenRow) []int32
	// noAdded, if set, is the tokenizer without added tokens, for
	// ids_no_special.
	noAdded *Tokenizer
	bos     []int32 // what AddSpecialTokens puts first
}

// check runs every row and returns how many passed in full: both
// encodings, the BOS form, both decodes (the skip-special one by dropping
// the special ids first, as Hugging Face does), the stream decode and the
// token bytes.
func (g golden) check(t *testing.T, rows []goldenRow) int {
	t.Helper()
	pass := 0
	for i, r := range rows {
		var errs []string
		fail := func(what string, got, want any) {
			errs = append(errs, what+": got "+toJSON(got)+", want "+toJSON(want))
		}
		if got := g.tok.EncodeWithSpecial(r.Text); !slices.Equal(got, r.IDs) {
			fail("EncodeWithSpecial", got, r.IDs)
		}
		if got, want := g.tok.Encode(r.Text), g.plain(r); !slices.Equal(got, want) {
			fail("Encode", got, want)
		}
		if g.noAdded != nil {
			if got, want := g.noAdded.Encode(r.Text), orIDs(r.IDsNoSpecial, r.IDs); !slices.Equal(got, want) {
				fail("Encode without added tokens", got, want)
			}
		}
		if got, want := g.tok.AddSpecialTokens(r.IDs), slices.Concat(g.bos, r.IDs); !slices.Equal(got, want) {
			fail("AddSpecialTokens", got, want)
		}
		text := or(r.DecodesTo, r.Text)
		if got := g.tok.Decode(r.IDs); got != text {
			fail("Decode", got, text)
		}
		if got := streamAll(g.tok, r.IDs); got != text {
			fail("stream", got, text)
		}
		skipped := slices.DeleteFunc(slices.Clone(r.IDs), g.tok.IsSpecial)
		if got, want := g.tok.Decode(skipped), or(r.DecodesToSkipSpecial, text); got != want {
			fail("Decode skipping special tokens", got, want)
		}
		for j, h := range r.TokenBytesHex {
			if got := hex.EncodeToString(g.tok.TokenBytes(r.IDs[j])); got != h {
				fail("bytes of token "+strconv.Itoa(j), got, h)
			}
		}
		if len(errs) > 0 {
			t.Errorf("row %d %q:\n\t%s", i, r.Text, strings.Join(errs, "\n\t"))
			continue
		}
		pass++
	}
	return pass
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func readGolden(tb testing.TB, path string, want int) []goldenRow {
	tb.Helper()
	var rows []goldenRow
	for _, line := range readLines(tb, path) {
		var r goldenRow
		if err := json.Unmarshal(line, &r); err != nil {
			tb.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != want {
		tb.Fatalf("%s: %d rows, want %d", path, len(rows), want)
	}
	return rows
}

// readLines returns the lines of a JSON-lines file (gunzipped if ".gz").
func readLines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	data := readData(tb, path)
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

func TestMistralGolden(t *testing.T) {
	rows := readGolden(t, mistralRows, 454)
	g := golden{
		tok: mistral(t),
		// Every added token is special: plain Encode recognises none.
		plain: func(r goldenRow) []int32 { return orIDs(r.IDsNoSpecial, r.IDs) },
		bos:   []int32{1},
	}
	pass := g.check(t, rows)
	t.Logf("%d/%d Mistral rows pass", pass, len(rows))
}

func TestQwen3Golden(t *testing.T) {
	rows := readGolden(t, qwen3Rows, 437)
	g := golden{
		tok: qwen3(t),
		// Plain Encode still recognises the 12 added tokens not marked
		// special: transformers' split_special_tokens=True.
		plain:   func(r goldenRow) []int32 { return orIDs(r.IDsSplitSpecial, r.IDs) },
		noAdded: withoutAddedTokens(t, qwen3Path),
	}
	pass := g.check(t, rows)
	t.Logf("%d/%d Qwen3 rows pass", pass, len(rows))
}

// withoutAddedTokens loads a tokenizer.json with its added_tokens removed:
// the vocabulary of these files does not hold them, so no added token is
// recognised at all (the golden ids_no_special).
func withoutAddedTokens(t *testing.T, path string) *Tokenizer {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(readData(t, path), &m); err != nil {
		t.Fatal(err)
	}
	m["added_tokens"] = json.RawMessage("[]")
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data, path+" without added tokens")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestMistralDecodeGolden checks the hand-picked decodes, and that each
// token's bytes are its text with "▁" as a space, or the byte of <0xNN>:
// the vocabulary that controllers see.
func TestMistralDecodeGolden(t *testing.T) {
	tok := mistral(t)
	lines := readLines(t, mistralDecodes)
	if len(lines) != 36 {
		t.Fatalf("%d decode rows, want 36", len(lines))
	}
	pass := 0
	for i, line := range lines {
		var r struct {
			IDs      []int32  `json:"ids"`
			Tokens   []string `json:"tokens"`
			Text     string   `json:"text"`
			TextSkip string   `json:"text_skip_special_tokens"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		ok := true
		if got := tok.Decode(r.IDs); got != r.Text {
			t.Errorf("row %d: Decode(%v) = %q, want %q", i, r.IDs, got, r.Text)
			ok = false
		}
		if got := streamAll(tok, r.IDs); got != r.Text {
			t.Errorf("row %d: stream of %v = %q, want %q", i, r.IDs, got, r.Text)
			ok = false
		}
		if got := tok.Decode(slices.DeleteFunc(slices.Clone(r.IDs), tok.IsSpecial)); got != r.TextSkip {
			t.Errorf("row %d: Decode skipping special tokens = %q, want %q", i, got, r.TextSkip)
			ok = false
		}
		for j, name := range r.Tokens {
			want := strings.ReplaceAll(name, "▁", " ")
			if h, found := strings.CutPrefix(name, "<0x"); found && len(name) == 6 {
				b, err := hex.DecodeString(strings.TrimSuffix(h, ">"))
				if err != nil {
					t.Fatal(err)
				}
				want = string(b)
			}
			if got := string(tok.TokenBytes(r.IDs[j])); got != want {
				t.Errorf("row %d: TokenBytes(%d) (%q) = %q, want %q", i, r.IDs[j], name, got, want)
				ok = false
			}
		}
		if ok {
			pass++
		}
	}
	t.Logf("%d/%d Mistral decode rows pass", pass, len(lines))
}

// TestMistralDisagreements: where transformers.js and Hugging Face's Rust
// tokenizers disagree (invalid byte runs), Decode follows the Rust
// ByteFallback decoder, one U+FFFD per byte of the run.
func TestMistralDisagreements(t *testing.T) {
	data, err := os.ReadFile(mistralDisagreements)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Decode []struct {
			IDs    []int32 `json:"ids"`
			Python string  `json:"python_reference"`
		} `json:"decode"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Decode) != 3 {
		t.Fatalf("%d decode disagreements, want 3", len(d.Decode))
	}
	tok := mistral(t)
	for _, r := range d.Decode {
		if got := tok.Decode(r.IDs); got != r.Python {
			t.Errorf("Decode(%v) = %q, want %q", r.IDs, got, r.Python)
		}
		if got := streamAll(tok, r.IDs); got != r.Python {
			t.Errorf("stream of %v = %q, want %q", r.IDs, got, r.Python)
		}
	}
}

// The two whitespace strings on which JavaScript disagrees: Unicode
// White_Space gives Python's and tiktoken's ids.
func TestQwen3Disagreements(t *testing.T) {
	rows := readDisagreements(t, qwen3Disagreements)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	tok := qwen3(t)
	for _, r := range rows {
		if got := tok.Encode(r.Text); !slices.Equal(got, r.Python) {
			t.Errorf("%q: %v, want %v", r.Text, got, r.Python)
		}
	}
}
