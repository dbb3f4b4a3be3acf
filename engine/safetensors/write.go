package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
)

// Write stores tensors and metadata at path atomically
// (internal/atomicfile): a crash leaves either the old file or the new one.
func Write(path string, metadata map[string]string, tensors []Tensor) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, metadata, tensors) })
}

// Encode writes a safetensors image of tensors and metadata to w. Tensors
// are laid out largest element size first, then by name, so each is
// aligned to its element size; the header is padded to a multiple of 8.
func Encode(w io.Writer, metadata map[string]string, tensors []Tensor) error {
	header, order, err := buildHeader(metadata, tensors)
	if err != nil {
		return err
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(header)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for _, i := range order {
		if _, err := w.Write(tensors[i].Data); err != nil {
			return err
		}
	}
	return nil
}

// buildHeader returns the padded JSON header and the order in which the
// tensors' data follows it.
func buildHeader(metadata map[string]string, tensors []Tensor) ([]byte, []int, error) {
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := &tensors[order[a]], &tensors[order[b]]
		if sa, sb := ta.DType.Size(), tb.DType.Size(); sa != sb {
			return sa > sb
		}
		return ta.Name < tb.Name
	})
	entries := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		entries["__metadata__"] = metadata
	}
	var off uint64
	for _, i := range order {
		t := &tensors[i]
		if t.DType.Size() == 0 {
			return nil, nil, fmt.Errorf("tensor %q: unsupported dtype %q", t.Name, t.DType)
		}
		if want := t.Elements() * t.DType.Size(); want != len(t.Data) {
			return nil, nil, fmt.Errorf("tensor %q: %s shape %v needs %d bytes, got %d", t.Name, t.DType, t.Shape, want, len(t.Data))
		}
		if _, dup := entries[t.Name]; dup {
			return nil, nil, fmt.Errorf("tensor %q given twice", t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		entries[t.Name] = map[string]any{
			"dtype":        t.DType,
			"shape":        shape,
			"data_offsets": [2]uint64{off, off + uint64(len(t.Data))},
		}
		off += uint64(len(t.Data))
	}
	h, err := json.Marshal(entries)
	if err != nil {
		return nil, nil, err
	}
	if pad := (8 - len(h)%8) % 8; pad > 0 {
		h = append(h, bytes.Repeat([]byte{' '}, pad)...)
	}
	return h, order, nil
}
