package abi_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// TestRecordLayout pins the result record to ABI.md's table: each field
// at its offset, little-endian, and ReadRecord the inverse of Append.
func TestRecordLayout(t *testing.T) {
	r := abi.Record{Flags: abi.FlagMask | abi.FlagForce, MaskPtr: 0x1000, Backtrack: 3, ForcePtr: 0x2000, ForceLen: 5, Temperature: 0.5}
	b := r.Append([]byte{0xee})[1:]
	le := binary.LittleEndian
	fields := []struct {
		name   string
		offset int
		want   uint32
	}{
		{"flags", 0, 0b01001},
		{"mask_ptr", 4, 0x1000},
		{"backtrack", 8, 3},
		{"force_ptr", 12, 0x2000},
		{"force_len", 16, 5},
		{"temperature", 20, math.Float32bits(0.5)},
	}
	if len(b) != abi.RecordSize || abi.RecordSize != 24 {
		t.Fatalf("record of %d bytes (RecordSize %d), ABI.md says 24", len(b), abi.RecordSize)
	}
	for _, f := range fields {
		if got := le.Uint32(b[f.offset:]); got != f.want {
			t.Errorf("%s at offset %d = %#x, want %#x", f.name, f.offset, got, f.want)
		}
	}
	if got := abi.ReadRecord(b); got != r {
		t.Errorf("ReadRecord(Append(r)) = %+v, want %+v", got, r)
	}
}

// TestFlags pins the flag bits to ABI.md's.
func TestFlags(t *testing.T) {
	bits := []uint32{abi.FlagMask, abi.FlagStop, abi.FlagTemperature, abi.FlagForce, abi.FlagBacktrack, abi.FlagFail}
	for i, f := range bits {
		if f != 1<<i {
			t.Errorf("flag %d is %#x, ABI.md says bit %d", i, f, i)
		}
	}
	if abi.KnownFlags != 0x3f || abi.FlagsV2 != 0x1f {
		t.Errorf("KnownFlags %#x, FlagsV2 %#x: want the six bits 0x3f, version 2's five 0x1f", abi.KnownFlags, abi.FlagsV2)
	}
}

func TestMaskWords(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 32: 1, 33: 2, 128256: 4008} {
		if got := abi.MaskWords(n); got != want {
			t.Errorf("MaskWords(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestVocabLayout pins the vocabulary entries: u8 flags, u16 length,
// the bytes, packed; a special token flagged; an over-long token cut.
func TestVocabLayout(t *testing.T) {
	long := bytes.Repeat([]byte{'x'}, abi.MaxTokenLen+1)
	blob := abi.AppendVocab(nil, [][]byte{[]byte("ab"), []byte("<s>"), nil, long}, []bool{false, true})
	want := append([]byte("\x00\x02\x00ab\x01\x03\x00<s>\x00\x00\x00\x00\xff\xff"), long[:abi.MaxTokenLen]...)
	if !bytes.Equal(blob, want) {
		t.Fatalf("blob starts % x, want % x", blob[:min(len(blob), 20)], want[:20])
	}
	if flags, n := abi.VocabEntry(blob[5:]); flags != abi.VocabSpecial || n != 3 {
		t.Errorf("VocabEntry of the second entry: flags %d, length %d; want %d, 3", flags, n, abi.VocabSpecial)
	}
}

// TestTrieRoundTrip encodes a two-token trie ("a", "ab") and reads it
// back in place: the header's counts, the sections' sizes, the nodes.
func TestTrieRoundTrip(t *testing.T) {
	nodes := []abi.TrieNode{{End: 2, First: 0, Depth: 0, Byte: 'a'}, {End: 2, First: 1, Depth: 1, Byte: 'b'}, {End: 3, First: 2}}
	var set abi.ByteSet
	set.Add('b')
	sets := []abi.ByteSet{{}, set}
	nodes[0].Below = 1
	enc := abi.AppendTrie(nil, nodes, sets, []int32{7, 9})
	if len(enc) != abi.TrieSize(2, 2, 2) || string(enc[:4]) != abi.TrieMagic {
		t.Fatalf("%d bytes starting %q, want %d starting %q", len(enc), enc[:4], abi.TrieSize(2, 2, 2), abi.TrieMagic)
	}
	if n := binary.LittleEndian.Uint32(enc[4:]); n != 2 {
		t.Errorf("n_nodes %d, want 2 (the sentinel not counted)", n)
	}
	words := make([]uint64, (len(enc)+7)/8) // ReadTrie wants 8-byte alignment
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(enc))
	copy(buf, enc)
	gotNodes, gotSets, gotIDs, err := abi.ReadTrie(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotNodes) != 3 || gotNodes[1] != nodes[1] || gotNodes[0].Below != 1 || len(gotSets) != 2 || gotSets[1] != set || len(gotIDs) != 2 || gotIDs[1] != 9 {
		t.Errorf("read back %v %v %v", gotNodes, gotSets, gotIDs)
	}
	if _, _, _, err := abi.ReadTrie(buf[:len(buf)-4]); err == nil {
		t.Error("a trie cut short was read")
	}
}

// TestDescriptionLayout pins dw_describe's record to ABI.md's table.
func TestDescriptionLayout(t *testing.T) {
	d := abi.Description{Flags: abi.ArgRequired, TextPtr: 0x1000, TextLen: 42}
	b := d.Append(nil)
	le := binary.LittleEndian
	if len(b) != abi.DescriptionSize || abi.DescriptionSize != 12 {
		t.Fatalf("description of %d bytes (DescriptionSize %d), ABI.md says 12", len(b), abi.DescriptionSize)
	}
	if le.Uint32(b[0:]) != 1 || le.Uint32(b[4:]) != 0x1000 || le.Uint32(b[8:]) != 42 {
		t.Errorf("description bytes %x: want flags 1 at 0, text_ptr at 4, text_len at 8", b)
	}
	if got := abi.ReadDescription(b); got != d {
		t.Errorf("ReadDescription(Append(d)) = %+v, want %+v", got, d)
	}
}
