package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// WriteTensor is a tensor for Write: its data given whole, or written by
// a function when Write reaches it, so that a large model need not be
// held in memory.
type WriteTensor struct {
	Name string
	Type Type
	// Dims is the shape in ggml's order, Dims[0] the row length.
	Dims []int
	// Data is the tensor's bytes, exactly its size; or nil, with Source.
	Data []byte
	// Source writes the tensor's bytes to w, exactly its size; used when
	// Data is nil.
	Source func(w io.Writer) error
}

// size is the bytes of t's data, checked as Open checks it.
func (t *WriteTensor) size() (int, error) {
	if len(t.Dims) == 0 || len(t.Dims) > MaxDims {
		return 0, fmt.Errorf("%d dimensions, want 1 to %d", len(t.Dims), MaxDims)
	}
	rows := 1
	for _, d := range t.Dims[1:] {
		if d < 1 || rows > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v: each dimension must be at least 1 and the product fit in an int", t.Dims)
		}
		rows *= d
	}
	if t.Dims[0] < 1 {
		return 0, fmt.Errorf("shape %v: each dimension must be at least 1", t.Dims)
	}
	row, err := t.Type.RowBytes(t.Dims[0])
	if err != nil {
		return 0, err
	}
	if row > math.MaxInt/rows {
		return 0, fmt.Errorf("shape %v of %s: more bytes than an int holds", t.Dims, t.Type)
	}
	return row * rows, nil
}

// Write writes a GGUF version 3 file of the metadata pairs and tensors
// to w, in the order given: the tensors' data follow the header, each
// aligned to general.alignment if meta has it, else DefaultAlignment,
// and padded with zeros. Open's limits on size (MaxHeaderBytes,
// MaxStringLen and the others) are not applied: a file past them is
// valid GGUF that Open refuses.
//
// # Errors
//
// An empty or repeated key, a value of a Go type KV does not list, a
// general.alignment that is not a uint32 power of two, a repeated tensor
// name, a shape Open would refuse, data of the wrong size, or w's error.
func Write(w io.Writer, meta []KV, tensors []WriteTensor) error {
	seen := map[string]bool{}
	for _, kv := range meta {
		if kv.Key == "" || seen[kv.Key] {
			return fmt.Errorf("metadata key %q is empty or given twice", kv.Key)
		}
		seen[kv.Key] = true
		if err := checkValue(kv.Value, 0); err != nil {
			return fmt.Errorf("metadata key %q: %w", kv.Key, err)
		}
	}
	align, err := alignment(newMetadata(meta))
	if err != nil {
		return err
	}
	sizes := make([]int, len(tensors))
	names := map[string]bool{}
	for i := range tensors {
		t := &tensors[i]
		if names[t.Name] {
			return fmt.Errorf("tensor %q given twice", t.Name)
		}
		names[t.Name] = true
		if sizes[i], err = t.size(); err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if t.Data == nil && t.Source == nil {
			return fmt.Errorf("tensor %q: no Data and no Source", t.Name)
		}
		if t.Data != nil && len(t.Data) != sizes[i] {
			return fmt.Errorf("tensor %q: %s shape %v needs %d bytes, got %d", t.Name, t.Type, t.Dims, sizes[i], len(t.Data))
		}
	}

	e := &encoder{w: bufio.NewWriterSize(w, 1<<16)}
	e.raw([]byte("GGUF"))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(meta)))
	for _, kv := range meta {
		e.str(kv.Key)
		vt, _ := valueTypeOf(kv.Value)
		e.u32(uint32(vt))
		e.value(kv.Value)
	}
	var off uint64
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(off)
		off = alignUp(off+uint64(sizes[i]), align)
	}
	e.pad(align)
	for i, t := range tensors {
		if t.Data != nil {
			e.raw(t.Data)
		} else if e.err == nil {
			before := e.n
			if err := t.Source(e); err != nil {
				return fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			if got := e.n - before; e.err == nil && got != uint64(sizes[i]) {
				return fmt.Errorf("tensor %q: Source wrote %d bytes, want %d", t.Name, got, sizes[i])
			}
		}
		e.pad(align)
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// checkValue refuses a metadata value of a Go type KV does not list, or
// arrays nested deeper than Open reads.
func checkValue(v any, depth int) error {
	if _, ok := valueTypeOf(v); !ok {
		return fmt.Errorf("value of Go type %T; want one of the types KV lists", v)
	}
	if inner, ok := v.([]any); ok {
		if depth+1 >= MaxArrayDepth {
			return fmt.Errorf("arrays nested more than %d deep", MaxArrayDepth)
		}
		for i, x := range inner {
			if _, ok := elemTypeOf(x); !ok {
				return fmt.Errorf("element %d of an array of arrays is %T, not an array", i, x)
			}
			if err := checkValue(x, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// encoder writes little-endian fields, counting the bytes; the first
// error sticks and later writes do nothing.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
}

// Write lets a tensor's Source write through the count.
func (e *encoder) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.n += uint64(n)
	e.err = err
	return n, err
}

func (e *encoder) raw(b []byte) { e.Write(b) }

func (e *encoder) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }

func (e *encoder) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := e.w.WriteString(s)
		e.n += uint64(n)
		e.err = err
	}
}

// pad writes zeros to the next multiple of align.
func (e *encoder) pad(align uint64) {
	if n := alignUp(e.n, align) - e.n; n > 0 {
		e.raw(make([]byte, n))
	}
}

// value writes v, which checkValue accepted, without its type.
func (e *encoder) value(v any) {
	switch x := v.(type) {
	case string:
		e.str(x)
		return
	case []string:
		e.u32(uint32(typeString))
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
		return
	case []any:
		e.u32(uint32(typeArray))
		e.u64(uint64(len(x)))
		for _, inner := range x {
			e.value(inner)
		}
		return
	}
	// A fixed-size value, or an array of them: encoding/binary writes
	// both as GGUF does (a bool as one byte, 0 or 1).
	if et, ok := elemTypeOf(v); ok {
		e.u32(uint32(et))
		e.u64(uint64(binary.Size(v) / et.size()))
	}
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil && e.err == nil {
		e.err = err
	}
	e.raw(b)
}
