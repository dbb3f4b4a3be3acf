package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Write stores tensors and metadata at path atomically: it writes a
// temporary file in the same folder, syncs it, renames it over path and
// syncs the folder, so a crash leaves either the old file or the new one.
//
// Tensors are laid out largest element size first, then by name, so each is
// aligned to its element size; the header is padded to a multiple of 8.
func Write(path string, metadata map[string]string, tensors []Tensor) error {
	header, order, err := buildHeader(metadata, tensors)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	w := bufio.NewWriterSize(tmp, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(header)))
	w.Write(lenBuf[:])
	w.Write(header)
	for _, i := range order {
		w.Write(tensors[i].Data)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
