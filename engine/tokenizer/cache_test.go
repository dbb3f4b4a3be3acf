package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// loadFromCache loads path through an empty cache, waits for the entry,
// and loads it again from the entry, which it returns too.
func loadFromCache(t *testing.T, path string) (*Tokenizer, string) {
	t.Helper()
	dir := t.TempDir()
	if _, _, err := LoadCached(path, dir); err != nil {
		t.Fatal(err)
	}
	entry := awaitEntry(dir)
	if entry == "" {
		t.Fatal("no cache entry was written")
	}
	tok, _, err := LoadCached(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok, entry
}

// awaitEntry waits up to five seconds for the one cache entry in dir,
// which a miss writes in the background, and returns its path ("" if
// none came).
func awaitEntry(dir string) string {
	for range 500 {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.bin")); len(m) == 1 {
			return m[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ""
}

// awaitRewrite waits up to five seconds for entry to be a whole entry
// for the source whose SHA-256 is sum (written again in the background
// after a damaged one was deleted), and returns readCache's last error.
func awaitRewrite(entry string, sum [32]byte) error {
	var err error
	for range 500 {
		if _, err = readCache(entry, sum); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// TestCacheRoundTrip: an entry decodes to exactly the file's decoded form,
// and a tokenizer built from it passes the golden rows and has the file's
// fingerprint.
func TestCacheRoundTrip(t *testing.T) {
	for _, path := range []string{llama3Path, mistralPath, qwen3Path, tinyPath} {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			tok, entry := loadFromCache(t, path)
			want, err := decodeFile(readData(t, path))
			if err != nil {
				t.Fatal(err)
			}
			// An entry holds the merges as build resolves them, in ids.
			if _, err := build(want); err != nil {
				t.Fatal(err)
			}
			want.Model.Merges = nil
			got, err := readCache(entry, sha256.Sum256(readData(t, path)))
			if err != nil {
				t.Fatal(err)
			}
			if !sameFile(t, got, want) {
				t.Fatal("the cache entry decodes to another file than the tokenizer.json")
			}
			plain, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Fingerprint() != plain.Fingerprint() || tok.VocabSize() != plain.VocabSize() {
				t.Errorf("fingerprint %s, vocabulary %d; Load: %s, %d", tok.Fingerprint(), tok.VocabSize(), plain.Fingerprint(), plain.VocabSize())
			}
		})
	}
	tok, _ := loadFromCache(t, llama3Path)
	rows := readRows(t, llama3Rows)
	if pass := checkRows(t, tok, rows); pass != len(rows) {
		t.Errorf("from the cache, %d of %d Llama 3 rows pass", pass, len(rows))
	}
}

// TestCacheDamage: a damaged or foreign entry is passed over (the
// tokenizer is still right) and written again.
func TestCacheDamage(t *testing.T) {
	_, entry := loadFromCache(t, tinyPath)
	sum := sha256.Sum256(readData(t, tinyPath))
	good, _ := os.ReadFile(entry)
	for name, bad := range map[string][]byte{
		"truncated":     good[:len(good)/2],
		"a flipped bit": flipped(good, len(good)/2),
		"empty":         {},
	} {
		os.WriteFile(entry, bad, 0o600)
		if _, err := readCache(entry, sum); err == nil {
			t.Errorf("%s: read as an entry", name)
		}
		tok, _, err := LoadCached(tinyPath, filepath.Dir(entry))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows := readRows(t, tinyRows)
		if pass := checkRows(t, tok, rows); pass != len(rows) {
			t.Errorf("%s: %d of %d rows pass", name, pass, len(rows))
		}
		if err := awaitRewrite(entry, sum); err != nil {
			t.Errorf("%s: the entry was not written again: %v", name, err)
		}
	}
}

// sameFile compares decoded files, their raw JSON parts compacted (the
// entry holds them compacted).
func sameFile(t *testing.T, a, b *fileJSON) bool {
	t.Helper()
	compact := func(raw json.RawMessage) string {
		if len(raw) == 0 {
			return "null"
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	for _, f := range []*fileJSON{a, b} {
		if m := f.Model; m != nil && m.entries != nil { // an entry's vocabulary is a list
			m.Vocab, m.entries = vocabJSON(maps.Collect(m.vocabulary())), nil
		}
		f.Normalizer, f.PreTokenizer = json.RawMessage(compact(f.Normalizer)), json.RawMessage(compact(f.PreTokenizer))
		f.Decoder, f.PostProcessor = json.RawMessage(compact(f.Decoder)), json.RawMessage(compact(f.PostProcessor))
	}
	return reflect.DeepEqual(a, b)
}

func flipped(b []byte, at int) []byte {
	c := append([]byte(nil), b...)
	c[at] ^= 0x10
	return c
}

// FuzzDecodeCache: any bytes either decode or are refused, without a
// panic; seeded with a real entry, so mutations reach every field.
func FuzzDecodeCache(f *testing.F) {
	file, err := decodeFile(readData(f, tinyPath))
	if err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256(readData(f, tinyPath))
	if _, err := build(file); err != nil { // it resolves the merges the entry holds
		f.Fatal(err)
	}
	enc, err := encodeCache(file, sum)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		if file, err := decodeCache(data, sum); err == nil {
			if _, err := build(file); err != nil {
				return // a whole entry of a file build refuses
			}
		}
	})
}

// TestCacheEntryThatDoesNotBuild: a whole entry (its checksum right)
// whose merges name a token past the vocabulary is not trusted: the
// tokenizer is decoded from the file again, the entry rewritten, and
// LoadCached says so.
func TestCacheEntryThatDoesNotBuild(t *testing.T) {
	_, entry := loadFromCache(t, tinyPath)
	sum := sha256.Sum256(readData(t, tinyPath))
	f, err := readCache(entry, sum)
	if err != nil {
		t.Fatal(err)
	}
	f.Model.resolved[0][2] = maxID - 1
	bad, err := encodeCache(f, sum)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entry, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, note, err := LoadCached(tinyPath, filepath.Dir(entry))
	if err != nil || !strings.Contains(note, "does not build") {
		t.Fatalf("LoadCached: %v, note %q", err, note)
	}
	plain, err := Load(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Fingerprint() != plain.Fingerprint() || !slices.Equal(tok.Encode("hello world"), plain.Encode("hello world")) {
		t.Error("the tokenizer after a bad entry is not the file's")
	}
	// The entry is written again in the background: let the writer finish
	// before the folder is removed.
	awaitRewrite(entry, sum)
}

// TestGGUFCache: a GGUF vocabulary's tokenizer from the cache is the one
// FromGGUF builds (TestGGUFLlamaCpp holds that one to llama.cpp): the
// same fingerprint and the same ids on llama.cpp's texts, special tokens
// parsed and not, and added; a damaged entry is passed over with a note.
// (A SentencePiece vocabulary, Mistral's, is not cached: FromGGUFCached.)
func TestGGUFCache(t *testing.T) {
	for _, name := range []string{"llama3", "qwen3"} {
		t.Run(name, func(t *testing.T) {
			v := ggufVocab(t, name)
			dir := t.TempDir()
			if _, _, err := FromGGUFCached(v, name+".gguf", dir); err != nil {
				t.Fatal(err)
			}
			entry := awaitEntry(dir)
			if entry == "" {
				t.Fatal("no cache entry was written")
			}
			plain := ggufTokenizer(t, name)
			check := func(what string) {
				tok, note, err := FromGGUFCached(v, name+".gguf", dir)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if what == "from the entry" && note != "" {
					t.Errorf("%s: note %q", what, note)
				}
				if tok.Fingerprint() != plain.Fingerprint() {
					t.Errorf("%s: fingerprint %s, FromGGUF's %s", what, tok.Fingerprint(), plain.Fingerprint())
				}
				for i, r := range readLlamaCpp(t, name) {
					if !slices.Equal(tok.Encode(r.Text), plain.Encode(r.Text)) ||
						!slices.Equal(tok.EncodeWithSpecial(r.Text), plain.EncodeWithSpecial(r.Text)) ||
						!slices.Equal(tok.AddSpecialTokens(tok.Encode(r.Text)), plain.AddSpecialTokens(plain.Encode(r.Text))) {
						t.Fatalf("%s: row %d %q: ids differ from FromGGUF's", what, i, r.Text)
					}
				}
			}
			check("from the entry")
			good, _ := os.ReadFile(entry)
			os.WriteFile(entry, flipped(good, len(good)/2), 0o600)
			tok, note, err := FromGGUFCached(v, name+".gguf", dir)
			if err != nil || !strings.Contains(note, "deleted, decoded again") || tok.Fingerprint() != plain.Fingerprint() {
				t.Errorf("past a damaged entry: note %q, error %v", note, err)
			}
			// The entry is written again in the background: wait for it
			// (and so for the writer to be done with the folder).
			if err := awaitRewrite(entry, v.fingerprint()); err != nil {
				t.Fatalf("the entry was not written again: %v", err)
			}
			check("written again")
		})
	}
}
