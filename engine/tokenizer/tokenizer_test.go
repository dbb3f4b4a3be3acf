package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

const (
	llama3Path     = "../../testdata/llama3-tokenizer/tokenizer.json.gz"
	llama3Rows     = "../../testdata/llama3-tokenizer/tokenize.jsonl.gz"
	tinyPath       = "../../testdata/tiny-tokenizer/tokenizer.json"
	tinyRows       = "../../testdata/tiny-tokenizer/tokenize.jsonl"
	disagreements  = "../../testdata/llama3-tokenizer/tokenize_disagreements.json"
	llama3Checksum = "e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7"
)

var (
	llama3Once sync.Once
	llama3Tok  *Tokenizer
	llama3Err  error
)

// llama3 loads the real Llama 3 tokenizer once for all tests.
func llama3(tb testing.TB) *Tokenizer {
	tb.Helper()
	llama3Once.Do(func() { llama3Tok, llama3Err = Load(llama3Path) })
	if llama3Err != nil {
		tb.Fatal(llama3Err)
	}
	return llama3Tok
}

func tiny(tb testing.TB) *Tokenizer {
	tb.Helper()
	tok, err := Load(tinyPath)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

type tokRow struct {
	Text          string   `json:"text"`
	IDs           []int32  `json:"ids"`
	IDsNoSpecial  []int32  `json:"ids_no_special"`
	TokenBytesHex []string `json:"token_bytes_hex"`
}

// readData reads a file, gunzipping a ".gz" one.
func readData(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			tb.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			tb.Fatal(err)
		}
	}
	return data
}

// readRows reads a JSON-lines file, gunzipping a ".gz" one.
func readRows(tb testing.TB, path string) []tokRow {
	tb.Helper()
	data := readData(tb, path)
	var rows []tokRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r tokRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			tb.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// checkRows runs the golden rows through tok and returns how many passed.
func checkRows(t *testing.T, tok *Tokenizer, rows []tokRow) int {
	pass := 0
	for i, r := range rows {
		ok := true
		if got := tok.EncodeWithSpecial(r.Text); !slices.Equal(got, r.IDs) {
			t.Errorf("row %d %q: EncodeWithSpecial = %v, want %v", i, r.Text, got, r.IDs)
			ok = false
		}
		want := r.IDsNoSpecial
		if want == nil {
			want = r.IDs
		}
		if got := tok.Encode(r.Text); !slices.Equal(got, want) {
			t.Errorf("row %d %q: Encode = %v, want %v", i, r.Text, got, want)
			ok = false
		}
		for _, ids := range [][]int32{r.IDs, want} {
			if got := tok.Decode(ids); got != r.Text {
				t.Errorf("row %d: Decode(%v) = %q, want %q", i, ids, got, r.Text)
				ok = false
			}
		}
		for j, h := range r.TokenBytesHex {
			if got := hex.EncodeToString(tok.TokenBytes(r.IDs[j])); got != h {
				t.Errorf("row %d token %d: bytes %s, want %s", i, j, got, h)
				ok = false
			}
		}
		if ok {
			pass++
		}
	}
	return pass
}

func TestLlama3Golden(t *testing.T) {
	rows := readRows(t, llama3Rows)
	if len(rows) != 380 {
		t.Fatalf("%d rows, want 380", len(rows))
	}
	pass := checkRows(t, llama3(t), rows)
	t.Logf("%d/%d Llama 3 rows pass", pass, len(rows))
}

func TestTinyGolden(t *testing.T) {
	rows := readRows(t, tinyRows)
	if len(rows) != 34 {
		t.Fatalf("%d rows, want 34", len(rows))
	}
	pass := checkRows(t, tiny(t), rows)
	t.Logf("%d/%d tiny rows pass", pass, len(rows))
}

// The two whitespace disagreements are not golden; Unicode White_Space
// semantics (Hugging Face's) give the Python reference encoder's ids.
func TestWhitespaceDisagreements(t *testing.T) {
	rows := readDisagreements(t, disagreements)
	tok := llama3(t)
	checked := 0
	for _, r := range rows {
		if r.Text != "x \ufeffy" && r.Text != "x \u0085y" {
			continue
		}
		checked++
		if got := tok.Encode(r.Text); !slices.Equal(got, r.Python) {
			t.Errorf("%q: %v, want %v", r.Text, got, r.Python)
		}
	}
	if checked != 2 {
		t.Errorf("found %d of the 2 whitespace rows", checked)
	}
}

// disagreement is a text on which reference encoders disagree, with the
// Python reference's ids.
type disagreement struct {
	Text   string  `json:"text"`
	Python []int32 `json:"python_reference"`
}

func readDisagreements(t *testing.T, path string) []disagreement {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []disagreement
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestAPI(t *testing.T) {
	tok := llama3(t)
	if got := tok.VocabSize(); got != 128256 {
		t.Errorf("VocabSize = %d, want 128256", got)
	}
	if got := tok.Fingerprint(); got != llama3Checksum {
		t.Errorf("Fingerprint = %s, want %s", got, llama3Checksum)
	}
	id, ok := tok.TokenID("<|eot_id|>")
	if !ok || id != 128009 || !tok.IsSpecial(id) {
		t.Errorf("TokenID(<|eot_id|>) = %d %v, special %v", id, ok, tok.IsSpecial(id))
	}
	if id, ok := tok.TokenID("Hello"); !ok || id != 9906 || tok.IsSpecial(id) {
		t.Errorf("TokenID(Hello) = %d %v", id, ok)
	}
	if _, ok := tok.TokenID("<|unknown|>"); ok {
		t.Error("TokenID found <|unknown|>")
	}
	if tok.TokenBytes(-1) != nil || tok.TokenBytes(128256) != nil || tok.IsSpecial(1<<30) {
		t.Error("out-of-range ids are not rejected")
	}
	added := tok.AddedTokens()
	if len(added) != 256 || added[0] != "<|begin_of_text|>" || added[9] != "<|eot_id|>" {
		t.Errorf("AddedTokens = %d tokens starting %q", len(added), added[:10])
	}
	if got := tok.Decode([]int32{9906, 1 << 30, -5, 0}); got != "Hello!" {
		t.Errorf("Decode skipping unknown ids = %q", got)
	}
	if got := tok.Decode([]int32{71567}); got != "\uFFFD" {
		t.Errorf("Decode of half a character = %q, want U+FFFD", got)
	}
}

// TestStreamDecoder feeds every multi-byte row id by id: no chunk holds a
// broken character, the chunks make up the text, and for every prefix of
// the ids the chunks plus Flush equal the one-shot Decode of that prefix.
func TestStreamDecoder(t *testing.T) {
	tok := llama3(t)
	d := tok.NewStreamDecoder()
	n := 0
	for _, r := range readRows(t, llama3Rows) {
		if !hasMultiByte(r.Text) {
			continue
		}
		n++
		var all strings.Builder
		for k, id := range r.IDs {
			chunk := d.Add(id)
			if !utf8.ValidString(chunk) || (strings.ContainsRune(chunk, utf8.RuneError) && !strings.ContainsRune(r.Text, utf8.RuneError)) {
				t.Fatalf("%q: chunk %d %q is broken", r.Text, k, chunk)
			}
			all.WriteString(chunk)
			if got, want := streamAll(tok, r.IDs[:k+1]), tok.Decode(r.IDs[:k+1]); got != want {
				t.Fatalf("%q: prefix %d streams to %q, Decode gives %q", r.Text, k+1, got, want)
			}
		}
		all.WriteString(d.Flush())
		if all.String() != r.Text {
			t.Errorf("stream of %q gave %q", r.Text, all.String())
		}
	}
	if n < 40 {
		t.Errorf("only %d multi-byte rows", n)
	}
	d.Add(71567)
	d.Reset()
	if got := d.Flush(); got != "" {
		t.Errorf("Flush after Reset = %q", got)
	}
	d.Add(71567)
	if got := d.Flush(); got != "\uFFFD" {
		t.Errorf("Flush of a partial character = %q", got)
	}
}

// streamAll decodes ids with a new StreamDecoder, flushing at the end.
func streamAll(tok *Tokenizer, ids []int32) string {
	d := tok.NewStreamDecoder()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Add(id))
	}
	b.WriteString(d.Flush())
	return b.String()
}

func hasMultiByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func TestStreamDecoderAllocs(t *testing.T) {
	tok := llama3(t)
	d := tok.NewStreamDecoder()
	ids := tok.Encode("Hello wörld, 你好 🦙 and more text")
	allocs := testing.AllocsPerRun(100, func() {
		for _, id := range ids {
			_ = d.Add(id)
		}
		d.Flush()
	})
	// Each Add or Flush may allocate only its returned string.
	if max := float64(len(ids) + 1); allocs > max {
		t.Errorf("%v allocations for %d ids, want at most %v", allocs, len(ids), max)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := tiny(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s := strings.Repeat("the little robot woke up ", i%7+1)
				if got := tok.Decode(tok.Encode(s)); got != s {
					t.Errorf("round trip of %q gave %q", s, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
