// Package gguf reads and writes GGUF, llama.cpp's model file: a header of
// metadata key-value pairs (hyper-parameters, the tokenizer, the chat
// template) and a list of tensors, then the tensors' data, each tensor
// in one of ggml's types (F16, Q4_0, Q4_K, ...). It also decodes and
// encodes the weights of the types Driftwood reads.
//
// Files are memory-mapped for reading; a tensor's Data is a slice of the
// mapping, valid until the File is closed. Every length in the header is
// checked against the bytes left in the file before it is used, the
// memory the decoded header may take is bounded (MaxHeaderBytes and the
// other limits below), and every tensor is checked against the file
// before its data is touched. Versions 2 and 3 are read, little-endian
// only (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
package gguf

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
	"github.com/driftwoodlabs/driftwood/internal/mapfile"
)

// Limits on what a header may make Open allocate. Each is far above what
// real files hold, and every count is also checked against the bytes
// left in the file.
const (
	// MaxHeaderBytes bounds the memory the decoded metadata and tensor
	// list take, charged before each string or array is allocated: the
	// same bound as a tokenizer.json (limitedfile.Tokenizer), which holds
	// the same vocabulary and merges. By this accounting Llama 3's
	// header takes about 11 MB (128,256 tokens, 280,147 merges), Qwen3's
	// about 8 MB.
	MaxHeaderBytes = limitedfile.Tokenizer
	// MaxKVs bounds the metadata pairs; real files have 20 to 60.
	MaxKVs = 1 << 16
	// MaxTensors bounds the tensors; Llama 3.1 405B has 1,138.
	MaxTensors = 1 << 16
	// MaxNameLen bounds a key or a tensor name: the spec's bound for
	// keys (ggml itself keeps tensor names under 64 bytes).
	MaxNameLen = 1<<16 - 1
	// MaxStringLen bounds one string value; the longest real ones, chat
	// templates, are tens of KB.
	MaxStringLen = 16 << 20
	// MaxArrayLen bounds one array's elements; real vocabularies have
	// 32k to 262k tokens.
	MaxArrayLen = 1 << 24
	// MaxArrayDepth bounds arrays nested in arrays (real files have
	// none; llama.cpp refuses them).
	MaxArrayDepth = 8
	// MaxDims is ggml's GGML_MAX_DIMS.
	MaxDims = 4
)

// DefaultAlignment is the alignment of tensor data when the file has no
// general.alignment.
const DefaultAlignment = 32

// headerSize is the magic, version and the two counts.
const headerSize = 4 + 4 + 8 + 8

// Memory charged for each metadata pair (its KV and index entry) and
// each tensor (its Tensor, dims and index entry), beside their strings.
const (
	kvCost     = 64
	tensorCost = 192
)

// Tensor is one tensor of a file.
type Tensor struct {
	Name string
	Type Type
	// Dims is the shape in ggml's order: Dims[0] is the innermost, the
	// length of a row (a weight matrix of out rows of in weights is
	// [in, out]).
	Dims []int
	// Offset is where Data starts in the file.
	Offset int64
	// Data is the tensor's bytes, in place in the file's mapping.
	Data []byte
}

// Elements is the number of weights, the product of Dims.
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// CheckSupported returns an error naming the tensor and its type if
// Driftwood does not read that type: a file may hold any ggml type, and a
// model loader refuses the ones it cannot use with this message.
func (t *Tensor) CheckSupported() error {
	if t.Type.Supported() {
		return nil
	}
	return fmt.Errorf("tensor %s is %s, which Driftwood does not read (it reads %s)", t.Name, t.Type, supportedList())
}

// File is an open, memory-mapped GGUF file.
type File struct {
	Path    string
	Version uint32
	// Size is the file's length in bytes.
	Size int64
	// Alignment is the alignment of the tensors' data, from
	// general.alignment or DefaultAlignment.
	Alignment int
	Meta      Metadata
	// Tensors are in the order the header lists them.
	Tensors []*Tensor
	byName  map[string]*Tensor
	mapping []byte
}

// Tensor looks a tensor up by name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	t, ok := f.byName[name]
	return t, ok
}

// Open maps path and parses and checks its header.
//
// # Errors
//
// A file that cannot be read or is not a regular file, one that is not
// GGUF, a version other than 2 and 3, a big-endian file, a header past
// the limits above, or a tensor that does not fit the file gives one
// error naming the file, the key or tensor, and the offset.
func Open(path string) (*File, error) {
	// O_NONBLOCK so that a FIFO with no writer does not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Map(f)
}

// Map maps the open file f and parses its header, as Open does; f may be
// closed afterwards. The file mapped is the one f names, whatever
// happened to its path since it was opened.
func Map(f *os.File) (*File, error) {
	path := f.Name()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, limitedfile.Kind(st.Mode()))
	}
	size := st.Size()
	if size < headerSize {
		return nil, fmt.Errorf("%s: file is %d bytes, too short for a GGUF header", path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: file too large to map", path)
	}
	m, err := mapfile.Map(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	g, err := parse(m)
	if err != nil {
		mapfile.Unmap(m)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.Path, g.Size = path, size
	return g, nil
}

// ReadIn reads the file into the page cache at once when the cache
// mostly lacks it, or holds it in small folios (mapfile.ReadIn): for a
// model about to run.
func (f *File) ReadIn() {
	if f.mapping != nil {
		mapfile.ReadIn(f.mapping, f.Path)
	}
}

// ReadAhead starts reading the file's pages into the page cache, in the
// background (mapfile.ReadAhead). It returns at once.
func (f *File) ReadAhead() {
	if f.mapping != nil {
		mapfile.ReadAhead(f.mapping)
	}
}

// Close unmaps the file; tensors' Data must not be used afterwards. Close
// is idempotent.
func (f *File) Close() error {
	if f.mapping == nil {
		return nil
	}
	err := mapfile.Unmap(f.mapping)
	f.mapping = nil
	return err
}

// parse reads and checks the header of the GGUF file held in buf; the
// tensors' Data are slices of buf.
func parse(buf []byte) (*File, error) {
	if len(buf) < headerSize {
		return nil, fmt.Errorf("file is %d bytes, too short for a GGUF header", len(buf))
	}
	if string(buf[:4]) != "GGUF" {
		return nil, fmt.Errorf("not a GGUF file: it starts with %q, not \"GGUF\"", buf[:4])
	}
	r := &reader{buf: buf, off: 4, budget: MaxHeaderBytes}
	version, _ := r.u32("")
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	nTensors, _ := r.u64("")
	nKVs, _ := r.u64("")
	if nKVs > MaxKVs {
		return nil, fmt.Errorf("header claims %d metadata pairs, more than the %d Driftwood reads", nKVs, MaxKVs)
	}
	if nTensors > MaxTensors {
		return nil, fmt.Errorf("header claims %d tensors, more than the %d Driftwood reads", nTensors, MaxTensors)
	}
	// A pair takes at least a key length, a type and a byte; a tensor a
	// name length, a dimension count, one dimension, a type and an offset.
	if need := nKVs*(8+4+1) + nTensors*(8+4+8+4+8); need > r.left() {
		return nil, fmt.Errorf("header claims %d metadata pairs and %d tensors, which need at least %d bytes; the file has %d after the header (truncated?)", nKVs, nTensors, need, r.left())
	}
	meta, err := r.metadata(int(nKVs))
	if err != nil {
		return nil, err
	}
	align, err := alignment(meta)
	if err != nil {
		return nil, err
	}
	infos, err := r.tensorInfos(int(nTensors))
	if err != nil {
		return nil, err
	}
	f := &File{Version: version, Alignment: int(align), Meta: meta, mapping: buf}
	if err := f.placeTensors(infos, alignUp(r.off, align)); err != nil {
		return nil, err
	}
	return f, nil
}

// checkVersion refuses what is not version 2 or 3 with the reason.
func checkVersion(v uint32) error {
	switch swapped := bits.ReverseBytes32(v); {
	case v == 2 || v == 3:
		return nil
	case v == 1:
		return fmt.Errorf("GGUF version 1 (2023's first GGUF, with 32-bit counts) is not read; convert the model again with a current llama.cpp")
	case v&0xffff == 0 && swapped >= 1 && swapped <= 3:
		return fmt.Errorf("big-endian GGUF (version %d with its bytes swapped); Driftwood reads little-endian files only", swapped)
	}
	return fmt.Errorf("GGUF version %d; Driftwood reads versions 2 and 3", v)
}

// metadata reads n key-value pairs, refusing an empty or repeated key.
func (r *reader) metadata(n int) (Metadata, error) {
	m := Metadata{kvs: make([]KV, 0, n), index: make(map[string]int, n)}
	for i := range n {
		start := r.off
		if err := r.charge(kvCost, start); err != nil {
			return Metadata{}, fmt.Errorf("metadata pair %d of %d: %w", i+1, n, err)
		}
		key, err := r.str("key", MaxNameLen)
		if err != nil {
			return Metadata{}, fmt.Errorf("metadata pair %d of %d: %w", i+1, n, err)
		}
		if key == "" {
			return Metadata{}, fmt.Errorf("metadata pair %d of %d at offset %d has an empty key", i+1, n, start)
		}
		if m.Has(key) {
			return Metadata{}, fmt.Errorf("metadata key %q at offset %d is given twice", key, start)
		}
		at := r.off
		t, err := r.u32("value type")
		if err != nil {
			return Metadata{}, fmt.Errorf("metadata key %q: %w", key, err)
		}
		if valueType(t).minBytes() == 0 {
			return Metadata{}, fmt.Errorf("metadata key %q: %w", key, errorAt(at, "unknown value type %d", t))
		}
		v, err := r.value(valueType(t), 0)
		if err != nil {
			return Metadata{}, fmt.Errorf("metadata key %q: %w", key, err)
		}
		m.index[key] = len(m.kvs)
		m.kvs = append(m.kvs, KV{key, v})
	}
	return m, nil
}

// alignment is general.alignment, which must be a uint32 power of two,
// or DefaultAlignment.
func alignment(m Metadata) (uint64, error) {
	const key = "general.alignment"
	v, ok := m.Get(key)
	if !ok {
		return DefaultAlignment, nil
	}
	a, ok := v.(uint32)
	if !ok {
		return 0, fmt.Errorf("metadata key %q is %s, want uint32", key, TypeName(v))
	}
	if a == 0 || a&(a-1) != 0 {
		return 0, fmt.Errorf("metadata key %q is %d, want a power of two", key, a)
	}
	return uint64(a), nil
}

func alignUp(off, align uint64) uint64 { return (off + align - 1) &^ (align - 1) }

// tensorInfo is a tensor as the header lists it, before it is placed.
type tensorInfo struct {
	name   string
	at     uint64 // where the entry starts, for errors
	typ    Type
	dims   []int
	size   uint64 // bytes of data
	offset uint64 // from the start of the data section
}

// tensorInfos reads n tensor entries, checking each shape and type.
func (r *reader) tensorInfos(n int) ([]tensorInfo, error) {
	infos := make([]tensorInfo, 0, n)
	seen := make(map[string]bool, n)
	for i := range n {
		start := r.off
		if err := r.charge(tensorCost, start); err != nil {
			return nil, fmt.Errorf("tensor %d of %d: %w", i+1, n, err)
		}
		name, err := r.str("name", MaxNameLen)
		if err != nil {
			return nil, fmt.Errorf("tensor %d of %d: %w", i+1, n, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("tensor %q at offset %d is listed twice", name, start)
		}
		seen[name] = true
		info, err := r.tensorInfo(name, start)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// tensorInfo reads the rest of an entry: dimensions, type, offset.
func (r *reader) tensorInfo(name string, start uint64) (tensorInfo, error) {
	info := tensorInfo{name: name, at: start}
	at := r.off
	nd, err := r.u32("dimension count")
	if err != nil {
		return info, err
	}
	if nd == 0 || nd > MaxDims {
		return info, errorAt(at, "%d dimensions, want 1 to %d", nd, MaxDims)
	}
	elems := uint64(1)
	info.dims = make([]int, nd)
	for j := range info.dims {
		at = r.off
		d, err := r.u64("dimension")
		if err != nil {
			return info, err
		}
		if d == 0 || d > math.MaxInt || elems > math.MaxInt/d {
			return info, errorAt(at, "dimension %d is %d; each must be at least 1 and the product fit in an int", j, d)
		}
		info.dims[j] = int(d)
		elems *= d
	}
	at = r.off
	t, err := r.u32("type")
	if err != nil {
		return info, err
	}
	info.typ = Type(t)
	bs := uint64(info.typ.BlockSize())
	switch {
	case bs == 0 && info.typ.named():
		return info, errorAt(at, "type %s, which ggml removed from GGUF files; no reader can size it", info.typ)
	case bs == 0:
		return info, errorAt(at, "unknown type %d", t)
	case uint64(info.dims[0])%bs != 0:
		return info, errorAt(at, "%s rows of %d weights, not a multiple of its block of %d", info.typ, info.dims[0], bs)
	}
	hi, lo := bits.Mul64(elems/bs, uint64(info.typ.BlockBytes()))
	if hi != 0 || lo > uint64(len(r.buf)) {
		return info, errorAt(at, "%s shape %v needs more bytes than the %d-byte file holds", info.typ, info.dims, len(r.buf))
	}
	info.size = lo
	if info.offset, err = r.u64("data offset"); err != nil {
		return info, err
	}
	return info, nil
}

// placeTensors checks each tensor's data against the file, from the data
// section at dataStart: aligned, inside the file, no two overlapping.
func (f *File) placeTensors(infos []tensorInfo, dataStart uint64) error {
	buf := f.mapping
	align := uint64(f.Alignment)
	f.Tensors = make([]*Tensor, len(infos))
	f.byName = make(map[string]*Tensor, len(infos))
	for i, in := range infos {
		if in.offset%align != 0 {
			return fmt.Errorf("tensor %q (entry at offset %d): data offset %d is not a multiple of the alignment %d", in.name, in.at, in.offset, align)
		}
		if dataStart > uint64(len(buf)) || in.offset > uint64(len(buf))-dataStart || in.size > uint64(len(buf))-dataStart-in.offset {
			return fmt.Errorf("tensor %q (entry at offset %d): %d bytes at data offset %d (file offset %d) run past the end of the %d-byte file (truncated?)",
				in.name, in.at, in.size, in.offset, dataStart+in.offset, len(buf))
		}
		begin := dataStart + in.offset
		end := begin + in.size
		t := &Tensor{Name: in.name, Type: in.typ, Dims: in.dims, Offset: int64(begin), Data: buf[begin:end:end]}
		f.Tensors[i] = t
		f.byName[in.name] = t
	}
	return disjoint(f.Tensors)
}

// disjoint refuses tensors whose data overlap: one would read the
// other's bytes.
func disjoint(ts []*Tensor) error {
	sorted := append([]*Tensor(nil), ts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Offset < sorted[j].Offset })
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if aEnd := a.Offset + int64(len(a.Data)); b.Offset < aEnd {
			return fmt.Errorf("tensors %q [%d, %d) and %q [%d, %d) overlap", a.Name, a.Offset, aEnd, b.Name, b.Offset, b.Offset+int64(len(b.Data)))
		}
	}
	return nil
}
