package weightsum

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func sum(tensors ...[]byte) [32]byte {
	h := sha256.New()
	Tensors(h, tensors)
	return [32]byte(h.Sum(nil))
}

// f32s is n random float32s in little-endian bytes.
func f32s(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0))
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(r.NormFloat64())))
	}
	return b
}

// edit applies f to every float32 of b whose index keep selects.
func edit(b []byte, keep func(i int) bool, f func(float32) float32) []byte {
	b = slices.Clone(b)
	for i := 0; i < len(b)/4; i++ {
		if keep(i) {
			v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f(v)))
		}
	}
	return b
}

// TestTensorsSees: what the sample tells apart and what it cannot. A
// fine-tune or merge changes a tensor densely; a lone changed weight
// between the sampled blocks is not seen (docs/RATIONALE.md says why
// that is acceptable).
func TestTensorsSees(t *testing.T) {
	const n = 1 << 20 // 4 MiB of float32: sampled, not read whole
	base := f32s(n, 1)
	small := f32s(1000, 2)
	all := func(int) bool { return true }
	cases := []struct {
		reason    string
		big, tiny []byte
		differs   bool
	}{
		{"the same bytes", base, small, false},
		{"every weight scaled by 1.5 (the issue's copy)", edit(base, all, func(v float32) float32 { return 1.5 * v }), small, true},
		{"one weight in a thousand nudged by one ulp (a light fine-tune)", edit(base, func(i int) bool { return i%1000 == 7 }, func(v float32) float32 { return math.Nextafter32(v, 10) }), small, true},
		{"a rank-one update (a LoRA merge of rank 1)", edit(base, all, func(v float32) float32 { return v + 1e-3 }), small, true},
		{"one weight of a small tensor (hashed whole)", base, edit(small, func(i int) bool { return i == 500 }, func(v float32) float32 { return -v }), true},
		{"the last weight (in the last block)", edit(base, func(i int) bool { return i == n-1 }, func(v float32) float32 { return -v }), small, true},
		{"a longer tensor", append(slices.Clone(base), 0, 0, 0, 0), small, true},
		{"one weight between the blocks: not seen", edit(base, func(i int) bool { return i == n/6 }, func(v float32) float32 { return -v }), small, false},
	}
	want := sum(base, small)
	for _, c := range cases {
		if got := sum(c.big, c.tiny) != want; got != c.differs {
			t.Errorf("%s: fingerprint differs %v, want %v", c.reason, got, c.differs)
		}
	}
	if sum(base, small) == sum(small, base) {
		t.Error("the order of the tensors is not part of the fingerprint")
	}
}

// TestBlocks: the first block starts the tensor, the last ends it, the
// rest lie evenly between; a short tensor is one block, whole.
func TestBlocks(t *testing.T) {
	data := make([]byte, 10*BlockSize+123)
	bs := blocks(data, Blocks)
	if len(bs) != Blocks {
		t.Fatalf("%d blocks, want %d", len(bs), Blocks)
	}
	at := func(b []byte) int { return cap(data) - cap(b) }
	if at(bs[0]) != 0 || at(bs[Blocks-1])+BlockSize != len(data) {
		t.Errorf("blocks at %d and %d: want the start and the end", at(bs[0]), at(bs[Blocks-1]))
	}
	for i := 1; i < Blocks; i++ {
		if at(bs[i]) <= at(bs[i-1]) || len(bs[i]) != BlockSize {
			t.Errorf("block %d at %d (%d bytes) after one at %d", i, at(bs[i]), len(bs[i]), at(bs[i-1]))
		}
	}
	short := data[:Blocks*BlockSize]
	if bs := blocks(short, Blocks); len(bs) != 1 || len(bs[0]) != len(short) {
		t.Errorf("a tensor of %d bytes: %d blocks, want itself", len(short), len(bs))
	}
}
