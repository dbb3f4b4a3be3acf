package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenTinyModel(t *testing.T) {
	f, err := Open("../../testdata/models/tiny-f32/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, ok := f.Tensors["model.embed_tokens.weight"]
	if !ok {
		t.Fatalf("embed_tokens missing; have %v", f.Names())
	}
	if e.DType != F32 || len(e.Shape) != 2 || e.Shape[0] != 512 || e.Shape[1] != 64 {
		t.Errorf("embed_tokens = %s %v, want F32 [512 64]", e.DType, e.Shape)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata = %v, want format pt", f.Metadata)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	in := []Tensor{
		{Name: "b", DType: BF16, Shape: []int{3}, Data: []byte{1, 2, 3, 4, 5, 6}},
		{Name: "a", DType: F32, Shape: []int{2, 1}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: "s", DType: U32, Shape: nil, Data: []byte{9, 9, 9, 9}},
	}
	if err := Write(path, map[string]string{"format": "mlx"}, in); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, want := range in {
		got := f.Tensors[want.Name]
		if got == nil || got.DType != want.DType || !bytes.Equal(got.Data, want.Data) || got.Elements() != want.Elements() {
			t.Errorf("tensor %s: got %+v, want %+v", want.Name, got, want)
		}
	}
	if f.Metadata["format"] != "mlx" {
		t.Errorf("metadata lost: %v", f.Metadata)
	}
	hlen := binary.LittleEndian.Uint64(f.mapping)
	if hlen%8 != 0 {
		t.Errorf("header length %d not a multiple of 8", hlen)
	}
	// f32 "a" comes first, aligned at data offset 0; u32 "s" next.
	if off := f.Tensors["a"].Data; &off[0] != &f.mapping[8+hlen] {
		t.Errorf("tensor a is not first in the data section")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteRejectsBadTensor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	err := Write(path, nil, []Tensor{{Name: "w", DType: F32, Shape: []int{3}, Data: make([]byte, 8)}})
	if err == nil || !strings.Contains(err.Error(), `tensor "w": F32 shape [3] needs 12 bytes, got 8`) {
		t.Fatalf("err = %v", err)
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Errorf("a failed write left %s behind", path)
	}
}

// file builds a safetensors image from a raw header and data.
func file(header string, data int) []byte {
	b := make([]byte, 8, 8+len(header)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

func TestCorruptHeaders(t *testing.T) {
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	cases := []struct {
		name, reason string
		buf          []byte
		want         string
	}{
		{"short", "fewer than 8 bytes", []byte{1, 2, 3}, "too short"},
		{"huge header", "a corrupt length must not be allocated", huge, "exceeds the"},
		{"past end", "a header longer than the file is a truncated file", append(file(`{}`, 0)[:8], '{'), "runs past the end"},
		{"bad json", "the header must be JSON", file(`{"a":`, 0), "not valid JSON"},
		{"bad dtype", "unknown dtypes are refused by name", file(`{"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, 8), `tensor "w": unsupported dtype "F64"`},
		{"outside", "offsets past the data are a truncated file", file(`{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 8), `tensor "w": data offsets [0, 16] lie outside the 8 data bytes`},
		{"shape mismatch", "the byte range must match the shape", file(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), `tensor "w": F32 shape [3] needs 12 bytes, header gives 8`},
		{"negative dim", "negative dimensions are invalid", file(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, 0), "bad dimension -1"},
		{"overflow", "a shape whose product overflows is refused", file(`{"w":{"dtype":"U8","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,0]}}`, 0), "larger than the file"},
		{"bad metadata", "metadata values are strings", file(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
		{"duplicate", "a name given twice must not keep the last entry silently", file(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), `tensor "w" is named twice`},
		{"overlap", "two tensors must not share bytes", file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}}`, 8), `tensors "a" [0, 4] and "b" [3, 5] overlap`},
		{"trailing", "nothing may follow the header object", file(`{} {}`, 0), "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseHeader(c.buf)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want it to contain %q", c.reason, err, c.want)
			}
		})
	}
}

func TestOpenTruncatedFileNamesPath(t *testing.T) {
	src, err := os.ReadFile("../../testdata/models/tiny-f32/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	os.WriteFile(path, src[:len(src)-100], 0o644)
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("err = %v, want the path and 'truncated'", err)
	}
}

func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want, reason string }{
		{fifo, "a FIFO", "a FIFO with no writer must not hang the open"},
		{dir, "a folder", "a folder (a shard named ..) must say so, not fail in mmap"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Open(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want the path and %q", c.reason, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Open is still blocked after 5 s", c.reason)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(file(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(file(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]}}`, 4))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		_, tensors, err := ParseHeader(buf)
		if err != nil {
			return
		}
		for name, tt := range tensors {
			if len(tt.Data) != tt.Elements()*tt.DType.Size() {
				t.Fatalf("tensor %q accepted with %d bytes for shape %v", name, len(tt.Data), tt.Shape)
			}
			for other, u := range tensors {
				if other != name && len(tt.Data) > 0 && len(u.Data) > 0 && &tt.Data[0] == &u.Data[0] {
					t.Fatalf("tensors %q and %q accepted sharing their bytes", name, other)
				}
			}
		}
	})
}

// TestReadAhead checks that reading ahead leaves the data as it was and
// that closing while it may still run, or after, is safe.
func TestReadAhead(t *testing.T) {
	const path = "../../testdata/models/tiny-f32/model.safetensors"
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b.ReadAhead()
	name := "model.embed_tokens.weight"
	if !bytes.Equal(a.Tensors[name].Data, b.Tensors[name].Data) {
		t.Fatal("tensor differs after ReadAhead")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b.ReadAhead() // closed: nothing to do
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c.ReadAhead()
	if err := c.Close(); err != nil { // possibly while the advice runs
		t.Fatal(err)
	}
}

// TestReadInKeepsPrivateWrites: ReadIn leaves a copy-on-write mapping
// alone, so that the writes its pages hold are kept.
func TestReadInKeepsPrivateWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	const size = 12 << 20
	if err := Write(path, nil, []Tensor{{Name: "w", DType: U8, Shape: []int{size}, Data: make([]byte, size)}}); err != nil {
		t.Fatal(err)
	}
	f, err := OpenPrivate(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := f.Tensors["w"].Data
	for off := 0; off < size; off += 1 << 20 {
		data[off] = 0xab
	}
	f.ReadIn()
	for off := 0; off < size; off += 1 << 20 {
		if data[off] != 0xab {
			t.Fatalf("byte %d written to the private mapping is %#x after ReadIn, want 0xab", off, data[off])
		}
	}
}
