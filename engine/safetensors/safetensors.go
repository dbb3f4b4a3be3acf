// Package safetensors reads and writes the safetensors file format: an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw tensor data.
//
// Files are memory-mapped for reading; a tensor's Data is a slice of the
// mapping, valid until the File is closed. Every header entry is checked
// against the file size before any data is touched.
package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
	"github.com/driftwoodlabs/driftwood/internal/mapfile"
)

// MaxHeaderSize bounds the JSON header (100 MB, as the reference
// implementation does), so a corrupt length cannot exhaust memory.
const MaxHeaderSize = 100 << 20

// DType is a tensor element type as spelled in the header.
type DType string

// The element types Driftwood reads and writes.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	U32  DType = "U32"
	I32  DType = "I32"
	U8   DType = "U8"
)

// Size is the number of bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32, U32, I32:
		return 4
	case F16, BF16:
		return 2
	case U8:
		return 1
	}
	return 0
}

// Tensor is one tensor of a file.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	// Data is the tensor's bytes, in place in the file's mapping.
	Data []byte
}

// Elements is the number of elements, the product of Shape.
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is an open, memory-mapped safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	Tensors  map[string]*Tensor
	// Size is the file's length in bytes.
	Size int64
	// HeaderSHA256 is the hex sha256 of the length prefix and JSON header:
	// it names every tensor's dtype, shape and place, so it identifies the
	// file's layout without reading the data.
	HeaderSHA256 string
	mapping      []byte
	// holds counts who keeps the mapping: the file until Close, and
	// each Hold until its release; the last one unmaps it.
	holds  atomic.Int32
	closed atomic.Bool
	// private: mapped copy-on-write, its Data writable.
	private bool
}

// Open maps path and parses its header.
//
// # Errors
//
// A file that cannot be read, a header that is too large or not valid JSON,
// an unknown dtype, or a tensor whose shape does not match its byte range or
// whose range lies outside the file gives an error naming the file and the
// tensor.
func Open(path string) (*File, error) {
	return openWith(path, false)
}

// openWith opens path and maps it, copy-on-write where private.
func openWith(path string, private bool) (*File, error) {
	// O_NONBLOCK so that a FIFO with no writer does not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mapWith(f, private)
}

// MapPrivate maps the open file f copy-on-write (mapfile.MapPrivate) and
// parses its header, as OpenPrivate does; f may be closed afterwards. The
// file mapped is the one f names, whatever happened to its path since it
// was opened: a caller that checked f (its owner, its mode) maps what it
// checked. Its tensors' Data may be written, in memory only, by whoever
// holds them (Hold).
func MapPrivate(f *os.File) (*File, error) {
	return mapWith(f, true)
}

// OpenPrivate is Open with the file mapped copy-on-write, as MapPrivate.
func OpenPrivate(path string) (*File, error) {
	return openWith(path, true)
}

func mapWith(f *os.File, private bool) (*File, error) {
	mapFile := mapfile.Map
	if private {
		mapFile = mapfile.MapPrivate
	}
	path := f.Name()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, limitedfile.Kind(st.Mode()))
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("%s: file is %d bytes, too short for a safetensors header", path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: file too large to map", path)
	}
	m, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	meta, tensors, err := parse(m)
	if err != nil {
		mapfile.Unmap(m)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	n := binary.LittleEndian.Uint64(m) // parse checked it
	sum := sha256.Sum256(m[:8+n])
	file := &File{Path: path, Metadata: meta, Tensors: tensors, Size: size, HeaderSHA256: hex.EncodeToString(sum[:]), mapping: m, private: private}
	file.holds.Store(1) // the file's own, until Close
	return file, nil
}

// Close unmaps the file, unless a Hold still keeps it; tensors' Data
// must not be used afterwards but by a holder. Close is idempotent.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	return f.drop()
}

// drop lets go of one hold; the last unmaps.
func (f *File) drop() error {
	if f.holds.Add(-1) > 0 {
		return nil
	}
	return mapfile.Unmap(f.mapping)
}

// Hold keeps the mapping, and so the tensors' Data, writable, after
// Close, until the release it returns is called (once). A file mapped
// read-only (Open), or closed, gives nil.
func (f *File) Hold() (release func() error) {
	if !f.private || f.closed.Load() {
		return nil
	}
	f.holds.Add(1)
	var once sync.Once
	return func() (err error) {
		once.Do(func() { err = f.drop() })
		return err
	}
}

// ReadIn reads the file into the page cache at once when the cache
// mostly lacks it, or holds it in small folios (mapfile.ReadIn): for
// weights about to run. A copy-on-write mapping, whose pages may hold
// writes that reading the file in again would drop, is left alone.
func (f *File) ReadIn() {
	if m := f.mapping; m != nil && !f.private && !f.closed.Load() {
		mapfile.ReadIn(m, f.Path)
	}
}

// ReadAhead starts reading the file's pages into the page cache, in the
// background (mapfile.ReadAhead), so that the first use of the weights
// does not wait for the disk. It returns at once; the file may be closed
// while it runs.
func (f *File) ReadAhead() {
	if m := f.mapping; m != nil && !f.closed.Load() {
		mapfile.ReadAhead(m)
	}
}

// Names lists the tensor names in sorted order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseHeader parses the header of a safetensors file held in buf and
// checks every tensor against len(buf).
func ParseHeader(buf []byte) (map[string]string, map[string]*Tensor, error) {
	return parse(buf)
}

type headerEntry struct {
	DType       DType     `json:"dtype"`
	Shape       []int64   `json:"shape"`
	DataOffsets [2]uint64 `json:"data_offsets"`
}

func parse(buf []byte) (map[string]string, map[string]*Tensor, error) {
	if len(buf) < 8 {
		return nil, nil, fmt.Errorf("file is %d bytes, too short for a safetensors header", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > MaxHeaderSize {
		return nil, nil, fmt.Errorf("header length %d exceeds the %d-byte limit (not a safetensors file?)", n, MaxHeaderSize)
	}
	if n > uint64(len(buf)-8) {
		return nil, nil, fmt.Errorf("header length %d runs past the end of the %d-byte file (truncated?)", n, len(buf))
	}
	raw, err := headerEntries(buf[8 : 8+n])
	if err != nil {
		return nil, nil, err
	}
	data := buf[8+n:]
	meta := map[string]string{}
	tensors := make(map[string]*Tensor, len(raw))
	spans := make([]span, 0, len(raw))
	for _, e := range raw {
		if e.name == "__metadata__" {
			if err := json.Unmarshal(e.msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("__metadata__ is not a map of strings: %v", err)
			}
			continue
		}
		t, sp, err := checkEntry(e.name, e.msg, data)
		if err != nil {
			return nil, nil, err
		}
		tensors[e.name] = t
		spans = append(spans, sp)
	}
	if err := disjoint(spans); err != nil {
		return nil, nil, err
	}
	return meta, tensors, nil
}

type rawEntry struct {
	name string
	msg  json.RawMessage
}

// headerEntries splits the header object into its entries, in order,
// refusing a name given twice: decoding into a map would keep the last
// one silently.
func headerEntries(header []byte) ([]rawEntry, error) {
	bad := func(err error) ([]rawEntry, error) {
		return nil, fmt.Errorf("header is not valid JSON: %v", err)
	}
	if !json.Valid(header) {
		return bad(json.Unmarshal(header, new(any)))
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad(errors.New("not an object"))
	}
	var out []rawEntry
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		name := tok.(string) // an object's keys are strings, and header is valid
		if seen[name] {
			return nil, fmt.Errorf("tensor %q is named twice in the header", name)
		}
		seen[name] = true
		var msg json.RawMessage
		if err := dec.Decode(&msg); err != nil {
			return bad(err)
		}
		out = append(out, rawEntry{name, msg})
	}
	return out, nil
}

// span is the byte range of one tensor's data.
type span struct {
	name       string
	begin, end uint64
}

// disjoint refuses tensors whose data overlap: one would read the other's
// bytes.
func disjoint(spans []span) error {
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	for i := 1; i < len(spans); i++ {
		a, b := spans[i-1], spans[i]
		if b.begin < a.end {
			return fmt.Errorf("tensors %q [%d, %d] and %q [%d, %d] overlap", a.name, a.begin, a.end, b.name, b.begin, b.end)
		}
	}
	return nil
}

func checkEntry(name string, msg json.RawMessage, data []byte) (*Tensor, span, error) {
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return nil, span{}, fmt.Errorf("tensor %q: bad header entry: %v", name, err)
	}
	es := e.DType.Size()
	if es == 0 {
		return nil, span{}, fmt.Errorf("tensor %q: unsupported dtype %q", name, e.DType)
	}
	shape := make([]int, len(e.Shape))
	count := uint64(1)
	for i, d := range e.Shape {
		if d < 0 || d > math.MaxInt32 {
			return nil, span{}, fmt.Errorf("tensor %q: bad dimension %d in shape %v", name, d, e.Shape)
		}
		shape[i] = int(d)
		count *= uint64(d)
		if count > uint64(len(data)) {
			return nil, span{}, fmt.Errorf("tensor %q: shape %v is larger than the file", name, e.Shape)
		}
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin > end || end > uint64(len(data)) {
		return nil, span{}, fmt.Errorf("tensor %q: data offsets [%d, %d] lie outside the %d data bytes (truncated file?)", name, begin, end, len(data))
	}
	if want := count * uint64(es); end-begin != want {
		return nil, span{}, fmt.Errorf("tensor %q: %s shape %v needs %d bytes, header gives %d", name, e.DType, e.Shape, want, end-begin)
	}
	return &Tensor{Name: name, DType: e.DType, Shape: shape, Data: data[begin:end:end]}, span{name, begin, end}, nil
}
