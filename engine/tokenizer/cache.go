package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/cachedir"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Reading a tokenizer.json is most of a chat's start: Llama 3's 9 MB take
// 0.35–0.45 s, most of it JSON (the vocabulary and merges), which is the
// same every time. LoadCached keeps the decoded file in a binary form
// keyed by the file's SHA-256, so the next load reads lengths and bytes
// instead of JSON, and builds the tokenizer from the same decoded form
// with the same code. The format is this package's own (gob would spend
// the time saved on reflection over 400,000 entries): a magic line, the
// file's small fields as JSON, the vocabulary and merges as
// length-prefixed strings, and a CRC-32C of all of it. An entry that does
// not decode whole is ignored and written again.

const cacheMagic = "driftwood-tokenizer-cache 1\n"

// cacheEntries bounds the folder: the least recently written leave first.
const cacheEntries = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// LoadCached is Load with a cache of the decoded file in dir ("" for
// none). A cache that cannot be read or written is passed over: the
// tokenizer is the one Load gives either way.
func LoadCached(path, dir string) (*Tokenizer, error) {
	if dir == "" {
		return Load(path)
	}
	data, err := readJSON(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	entry := filepath.Join(dir, hex.EncodeToString(sum[:16])+".bin")
	f, err := readCache(entry)
	missed := err != nil
	if missed {
		if f, err = decodeFile(data); err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", path, err)
		}
	}
	t, err := build(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	if missed {
		// Off the caller's path: the first load of a file pays nothing
		// for the next ones.
		go writeCache(dir, entry, f)
	}
	t.fingerprint = hex.EncodeToString(sum[:])
	return t, nil
}

// readCache decodes a cache entry, or says why it cannot.
func readCache(path string) (*fileJSON, error) {
	data, err := limitedfile.Read(path, limitedfile.Tokenizer)
	if err != nil {
		return nil, err
	}
	return decodeCache(data)
}

// writeCache saves f as entry, atomically, and trims the folder.
func writeCache(dir, entry string, f *fileJSON) {
	data, err := encodeCache(f)
	if err != nil || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	if atomicfile.Write(entry, func(w io.Writer) error { _, err := w.Write(data); return err }) != nil {
		return
	}
	cachedir.Trim(dir, ".bin", cacheEntries, 0)
}

// encodeCache writes f in the cache format.
func encodeCache(f *fileJSON) ([]byte, error) {
	small := *f
	model := *f.Model
	model.Vocab, model.Merges = nil, nil
	small.Model = &model
	var header bytes.Buffer
	enc := json.NewEncoder(&header)
	enc.SetEscapeHTML(false) // the raw parts as written, only compacted
	if err := enc.Encode(&small); err != nil {
		return nil, err
	}
	var b []byte
	b = append(b, cacheMagic...)
	b = appendString(b, header.String())
	b = binary.AppendUvarint(b, uint64(len(f.Model.Vocab)))
	for s, id := range f.Model.Vocab {
		b = appendString(b, s)
		b = binary.AppendUvarint(b, uint64(id))
	}
	b = binary.AppendUvarint(b, uint64(len(f.Model.Merges)))
	for _, m := range f.Model.Merges {
		b = appendString(appendString(b, m[0]), m[1])
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBadCache = errors.New("not a whole tokenizer cache entry")

// decodeCache reads the cache format; the strings share one copy of
// data.
func decodeCache(data []byte) (*fileJSON, error) {
	n := len(data) - 4
	if n < len(cacheMagic) || !bytes.HasPrefix(data, []byte(cacheMagic)) ||
		crc32.Checksum(data[:n], castagnoli) != binary.LittleEndian.Uint32(data[n:]) {
		return nil, errBadCache
	}
	r := cacheReader{s: string(data[len(cacheMagic):n])}
	var f fileJSON
	if err := json.Unmarshal([]byte(r.str()), &f); err != nil || f.Model == nil {
		return nil, errBadCache
	}
	count := r.count()
	f.Model.Vocab = make(vocabJSON, count)
	for range count {
		s := r.str()
		id := r.uvarint()
		if id >= maxID {
			return nil, errBadCache
		}
		f.Model.Vocab[s] = int32(id)
	}
	count = r.count()
	f.Model.Merges = make(mergesJSON, count)
	for i := range f.Model.Merges {
		f.Model.Merges[i] = [2]string{r.str(), r.str()}
	}
	if r.bad || len(r.s) != 0 {
		return nil, errBadCache
	}
	return &f, nil
}

// cacheReader reads the cache format's fields; a read past the end sets
// bad and returns zeros.
type cacheReader struct {
	s   string
	bad bool
}

func (r *cacheReader) uvarint() uint64 {
	v, n := binary.Uvarint([]byte(r.s[:min(len(r.s), binary.MaxVarintLen64)]))
	if n <= 0 {
		r.bad, r.s = true, ""
		return 0
	}
	r.s = r.s[n:]
	return v
}

// count reads a count of entries, bounded by what is left (each entry
// takes at least two bytes).
func (r *cacheReader) count() int {
	v := r.uvarint()
	if v > uint64(len(r.s)/2) {
		r.bad, r.s = true, ""
		return 0
	}
	return int(v)
}

func (r *cacheReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.s)) {
		r.bad, r.s = true, ""
		return ""
	}
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}
