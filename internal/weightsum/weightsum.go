// Package weightsum fingerprints the weights of a memory-mapped model
// file by their content without reading the whole file: every tensor
// contributes its length and a fixed set of evenly spaced blocks of its
// bytes (all of them when it is small). A fine-tune, a merge or a
// LoRA-merged copy changes its tensors densely, so each sampled block
// differs; docs/RATIONALE.md ("Model fingerprints sample the weights")
// has the measurements and what a sample cannot see.
//
// The functions work on byte slices of any mapping (safetensors today,
// GGUF tomorrow): the caller names the tensors' bytes in a fixed order.
package weightsum

import (
	"encoding/binary"
	"hash"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sampling: Blocks blocks of BlockSize bytes per tensor, the first at
// the tensor's start, the last at its end, the rest evenly between.
const (
	BlockSize = 4 << 10
	Blocks    = 4
)

// Tensors writes into h the length and the sampled blocks of each of
// tensors (slices of a mapped file), in the order given. The blocks are
// asked for first (MADV_WILLNEED), so that the disk reads them together
// rather than one fault at a time.
func Tensors(h hash.Hash, tensors [][]byte) { sample(h, tensors, Blocks, true) }

// sample is Tensors with the number of blocks a tensor and the advice
// given (the benchmarks compare them).
func sample(h hash.Hash, tensors [][]byte, n int, advise bool) {
	if advise {
		for _, t := range tensors {
			for _, b := range blocks(t, n) {
				willNeed(b)
			}
		}
	}
	var size [8]byte
	for _, t := range tensors {
		binary.LittleEndian.PutUint64(size[:], uint64(len(t)))
		h.Write(size[:])
		for _, b := range blocks(t, n) {
			h.Write(b)
		}
	}
}

// blocks returns n sampled blocks of t, or t whole when it is at most n
// blocks long.
func blocks(t []byte, n int) [][]byte {
	if len(t) <= n*BlockSize {
		return [][]byte{t}
	}
	out := make([][]byte, n)
	last := len(t) - BlockSize
	for i := range out {
		at := int(int64(last) * int64(i) / int64(n-1))
		out[i] = t[at : at+BlockSize]
	}
	return out
}

// willNeed starts reading b's pages in the background; b is a slice of
// a mapping (madvise wants a page-aligned start).
func willNeed(b []byte) {
	if len(b) == 0 {
		return
	}
	unix.Madvise(alignDown(b), unix.MADV_WILLNEED)
}

// alignDown widens b down to the start of its first page.
func alignDown(b []byte) []byte {
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % uintptr(pageSize))
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -off)), len(b)+off)
}

var pageSize = unix.Getpagesize()
