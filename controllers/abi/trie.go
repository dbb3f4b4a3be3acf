package abi

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The token trie the trie import copies out: a header (TrieMagic, then
// u32 n_nodes, n_sets and n_ids), n_nodes + 1 TrieNode (the last one a
// sentinel), n_sets ByteSet (set 0 empty), then n_ids i32 token ids.
// Each section is laid out exactly as a slice of its Go type is in a
// little-endian machine's memory, so a guest reads it in place
// (ReadTrie).
const (
	TrieMagic      = "DWT1"
	TrieHeaderSize = 16
	TrieNodeSize   = 16
	ByteSetSize    = 32
)

// The Go types are the format: these fail to compile if their sizes
// differ from it.
var (
	_ [TrieNodeSize - unsafe.Sizeof(TrieNode{})]struct{}
	_ [unsafe.Sizeof(TrieNode{}) - TrieNodeSize]struct{}
	_ [ByteSetSize - unsafe.Sizeof(ByteSet{})]struct{}
	_ [unsafe.Sizeof(ByteSet{}) - ByteSetSize]struct{}
)

// TrieNode is one node of the trie, in depth-first order with children
// in increasing byte order.
type TrieNode struct {
	// End is the index just past this node's subtree.
	End uint32
	// First is where this node's tokens start in the ids: the tokens
	// ending at node i are ids [First(i), First(i+1)), those of its
	// subtree ids [First(i), First(End(i))). The sentinel's is n_ids.
	First uint32
	// Below indexes the byte sets: the bytes on the edges of the subtree
	// below this node, or 0 (the empty set) for a leaf or a small
	// subtree.
	Below uint32
	// Depth is the number of bytes above the node (0 for a token's first
	// byte).
	Depth uint16
	// Byte is the byte on the edge into the node.
	Byte byte
	_    byte
}

// ByteSet is a set of bytes: b is in it when bit b%64 of word b/64 is
// set.
type ByteSet [4]uint64

// Add puts b in the set.
func (s *ByteSet) Add(b byte) { s[b>>6] |= 1 << (b & 63) }

// Union adds o's bytes to s.
func (s *ByteSet) Union(o *ByteSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

// Without returns the bytes of s not in o.
func (s *ByteSet) Without(o *ByteSet) ByteSet {
	return ByteSet{s[0] &^ o[0], s[1] &^ o[1], s[2] &^ o[2], s[3] &^ o[3]}
}

// Empty reports whether s has no byte.
func (s *ByteSet) Empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }

// TrieSize is the size in bytes of a trie of n nodes (the sentinel not
// counted), sets byte sets and ids token ids.
func TrieSize(nodes, sets, ids int) int {
	return TrieHeaderSize + (nodes+1)*TrieNodeSize + sets*ByteSetSize + ids*4
}

// AppendTrie appends the trie of nodes (the sentinel included), sets
// and ids to b.
func AppendTrie(b []byte, nodes []TrieNode, sets []ByteSet, ids []int32) []byte {
	le := binary.LittleEndian
	b = append(b, TrieMagic...)
	b = le.AppendUint32(b, uint32(len(nodes)-1))
	b = le.AppendUint32(b, uint32(len(sets)))
	b = le.AppendUint32(b, uint32(len(ids)))
	for _, n := range nodes {
		b = le.AppendUint32(b, n.End)
		b = le.AppendUint32(b, n.First)
		b = le.AppendUint32(b, n.Below)
		b = le.AppendUint16(b, n.Depth)
		b = append(b, n.Byte, 0)
	}
	for _, s := range sets {
		for _, w := range s {
			b = le.AppendUint64(b, w)
		}
	}
	for _, id := range ids {
		b = le.AppendUint32(b, uint32(id))
	}
	return b
}

// ReadTrie returns the sections of the trie that b holds, reading b in
// place: b must stay unchanged while they are used. b must be 8-byte
// aligned, and the machine little-endian, as WebAssembly is. The nodes
// are trusted (the host built them); only the sizes and the sentinel
// are checked.
func ReadTrie(b []byte) (nodes []TrieNode, sets []ByteSet, ids []int32, err error) {
	le := binary.LittleEndian
	if len(b) < TrieHeaderSize || string(b[:4]) != TrieMagic {
		return nil, nil, nil, fmt.Errorf("trie: no %s header", TrieMagic)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, nil, nil, fmt.Errorf("trie: read in place needs a little-endian machine")
	}
	if uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		return nil, nil, nil, fmt.Errorf("trie: buffer not 8-byte aligned")
	}
	n, s, m := int(le.Uint32(b[4:])), int(le.Uint32(b[8:])), int(le.Uint32(b[12:]))
	if size := TrieSize(n, s, m); s < 1 || len(b) != size {
		return nil, nil, nil, fmt.Errorf("trie: %d bytes for %d nodes, %d sets and %d ids, want %d", len(b), n, s, m, size)
	}
	off := TrieHeaderSize
	nodes = unsafe.Slice((*TrieNode)(unsafe.Pointer(&b[off])), n+1)
	off += (n + 1) * TrieNodeSize
	sets = unsafe.Slice((*ByteSet)(unsafe.Pointer(&b[off])), s)
	off += s * ByteSetSize
	if m > 0 {
		ids = unsafe.Slice((*int32)(unsafe.Pointer(&b[off])), m)
	}
	if int(nodes[n].First) != m {
		return nil, nil, nil, fmt.Errorf("trie: sentinel node points at id %d of %d", nodes[n].First, m)
	}
	return nodes, sets, ids, nil
}
