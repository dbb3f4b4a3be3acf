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
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/cachedir"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
	"github.com/driftwoodlabs/driftwood/internal/privatefile"
)

// Reading a tokenizer.json is most of a chat's start: Llama 3's 9 MB take
// 0.35–0.45 s, most of it JSON (the vocabulary and merges), which is the
// same every time. LoadCached keeps the decoded file in a binary form
// keyed by the file's SHA-256, so the next load reads lengths and bytes
// instead of JSON, and builds the tokenizer from the same decoded form
// with the same code. The format is this package's own (gob would spend
// the time saved on reflection over 400,000 entries): a magic line, the
// file's small fields as JSON, the vocabulary as length-prefixed
// strings, the merges as the ids of their tokens (format 3: resolving
// 280,000 merges' strings to ids was a third of a cached load), and a
// CRC-32C of all of it.
//
// The cache trusts what the compile cache trusts (internal/privatefile):
// a folder of the user's, made 0700 (another user's is not used), and
// entries that are regular files of the user's that no one else may
// write. An entry records the SHA-256 of the tokenizer.json it was
// decoded from, and is used only for that file: another file's entry
// renamed into place, a damaged or foreign one is deleted, the file
// decoded again and the entry rewritten, and LoadCached says so in
// one line. An entry of an earlier format is replaced without a word.

// cacheFormat starts every entry; cacheMagic is this version's.
const (
	cacheFormat = "driftwood-tokenizer-cache "
	cacheMagic  = cacheFormat + "3\n"
)

// cacheEntries bounds the folder: the least recently written leave first.
const cacheEntries = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// LoadCached is Load with a cache of the decoded file in dir ("" for
// none). A cache that cannot be read or written is passed over: the
// tokenizer is the one Load gives either way, and note is one line for
// the user when the cache was passed over for a reason worth knowing (a
// folder of another user's; an entry that failed its checks, then
// deleted), "" otherwise.
func LoadCached(path, dir string) (t *Tokenizer, note string, err error) {
	if dir == "" {
		t, err := Load(path)
		return t, "", err
	}
	sum, err := sumJSON(path)
	if err != nil {
		return nil, "", err
	}
	t, note, err = buildCached(dir, sum, func() (*fileJSON, error) {
		data, err := readJSON(path)
		if err != nil {
			return nil, err
		}
		if sha256.Sum256(data) != sum { // the entry written would name other contents
			return nil, errors.New("the file changed while it was read; load it again")
		}
		return decodeFile(data)
	})
	if err != nil {
		return nil, note, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	t.fingerprint = hex.EncodeToString(sum[:])
	return t, note, nil
}

// sumJSON is the SHA-256 of what readJSON(path) returns. A plain file is
// hashed a piece at a time, so that a load from the cache never reads
// the whole file into memory: Llama 3's 9 MB tokenizer.json took 40–55 ms
// to read whole in a new process, most of it faulting in the fresh
// buffer, against 5 ms to hash.
func sumJSON(path string) ([32]byte, error) {
	if strings.HasSuffix(path, ".gz") {
		data, err := readJSON(path)
		return sha256.Sum256(data), err
	}
	return limitedfile.Sum256(path, limitedfile.Tokenizer)
}

// buildCached builds the tokenizer from the cache entry in dir for the
// source whose SHA-256 is sum, or, when there is none (or it fails its
// checks, and is deleted), from what decode gives, and writes the entry
// for the next time. note is as LoadCached's.
func buildCached(dir string, sum [32]byte, decode func() (*fileJSON, error)) (t *Tokenizer, note string, err error) {
	entry := filepath.Join(dir, hex.EncodeToString(sum[:16])+".bin")
	var f *fileJSON
	usable := true
	if derr := privatefile.Dir(dir); derr != nil {
		usable, note = false, fmt.Sprintf("tokenizer cache not used (%v)", derr)
	} else if f, err = readCache(entry, sum); err != nil {
		f = nil
		if !errors.Is(err, fs.ErrNotExist) {
			os.Remove(entry)
			if !errors.Is(err, errOldCache) {
				note = fmt.Sprintf("tokenizer cache: the entry %s %v: deleted, decoded again", entry, err)
			}
		}
	}
	if f != nil {
		if t, err = build(f); err != nil { // a whole entry that does not build: trusted no further
			os.Remove(entry)
			note = fmt.Sprintf("tokenizer cache: the entry %s does not build (%v): deleted, decoded again", entry, err)
			f = nil
		}
	}
	missed := f == nil
	if missed {
		if f, err = decode(); err != nil {
			return nil, note, err
		}
		if t, err = build(f); err != nil {
			return nil, note, err
		}
	}
	if missed && usable {
		// Off the caller's path: the first load of a file pays nothing
		// for the next ones.
		go writeCache(dir, entry, f, sum)
	}
	return t, note, nil
}

// readCache decodes the cache entry at path, made from the file whose
// SHA-256 is sum, or says why it cannot (in words that follow the
// entry's name).
func readCache(path string, sum [32]byte) (*fileJSON, error) {
	data, err := privatefile.Read(path, limitedfile.Tokenizer)
	if err != nil {
		return nil, err
	}
	return decodeCache(data, sum)
}

// writeCache saves f, decoded from the file whose SHA-256 is sum, as
// entry, atomically, and trims the folder.
func writeCache(dir, entry string, f *fileJSON, sum [32]byte) {
	data, err := encodeCache(f, sum)
	if err != nil || privatefile.Dir(dir) != nil {
		return
	}
	if atomicfile.WriteMode(entry, 0o600, func(w io.Writer) error { _, err := w.Write(data); return err }) != nil {
		return
	}
	cachedir.Trim(dir, ".bin", cacheEntries, 0)
}

// encodeCache writes f, decoded from the file whose SHA-256 is sum, in
// the cache format.
func encodeCache(f *fileJSON, sum [32]byte) ([]byte, error) {
	small := *f
	model := *f.Model
	if model.ranks != nil || model.resolved == nil && len(model.Merges) > 0 {
		return nil, errors.New("the merges are not resolved to ids") // build resolves them
	}
	model.Vocab, model.Merges, model.entries = nil, nil, nil
	small.Model = &model
	var header bytes.Buffer
	enc := json.NewEncoder(&header)
	enc.SetEscapeHTML(false) // the raw parts as written, only compacted
	if err := enc.Encode(&small); err != nil {
		return nil, err
	}
	var b []byte
	b = append(b, cacheMagic...)
	b = append(b, sum[:]...)
	b = appendString(b, header.String())
	n := len(f.Model.Vocab) + len(f.Model.entries) // one of them is empty
	b = binary.AppendUvarint(b, uint64(n))
	for s, id := range f.Model.vocabulary() {
		b = appendString(b, s)
		b = binary.AppendUvarint(b, uint64(id))
	}
	b = binary.AppendUvarint(b, uint64(len(model.resolved)))
	for _, m := range model.resolved {
		for _, id := range m {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var (
	errBadCache   = errors.New("is damaged (not a whole tokenizer cache entry)")
	errOldCache   = errors.New("is of an earlier format")
	errOtherCache = errors.New("was decoded from another tokenizer.json than its name says")
)

// decodeCache reads the cache format, from an entry made from the file
// whose SHA-256 is sum; the strings are data's bytes, which the caller
// must not write again.
func decodeCache(data []byte, sum [32]byte) (*fileJSON, error) {
	if !bytes.HasPrefix(data, []byte(cacheMagic)) && bytes.HasPrefix(data, []byte(cacheFormat)) {
		return nil, errOldCache
	}
	n := len(data) - 4
	start := len(cacheMagic) + len(sum)
	if n < start || !bytes.HasPrefix(data, []byte(cacheMagic)) ||
		crc32.Checksum(data[:n], castagnoli) != binary.LittleEndian.Uint32(data[n:]) {
		return nil, errBadCache
	}
	if !bytes.Equal(data[len(cacheMagic):start], sum[:]) {
		return nil, errOtherCache
	}
	// The vocabulary's strings are cut from the entry without copying it:
	// a copy of a 4 MB entry is fresh memory, slow to fault in in a new
	// process.
	r := cacheReader{s: unsafe.String(unsafe.SliceData(data[start:n]), n-start)}
	var f fileJSON
	if err := json.Unmarshal([]byte(r.str()), &f); err != nil || f.Model == nil {
		return nil, errBadCache
	}
	count := r.count()
	f.Model.Vocab, f.Model.entries = nil, make([]vocabEntry, count)
	for i := range f.Model.entries {
		s := r.str()
		id := r.uvarint()
		if id >= maxID {
			return nil, errBadCache
		}
		f.Model.entries[i] = vocabEntry{s, int32(id)}
	}
	count = r.count()
	f.Model.Merges, f.Model.resolved = nil, make([][3]int32, count)
	for i := range f.Model.resolved {
		for j := range 3 {
			id := r.uvarint()
			if id >= maxID {
				return nil, errBadCache
			}
			f.Model.resolved[i][j] = int32(id)
		}
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
