package sdk

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The ABI's trie format (controllers/ABI.md): a 16-byte header, then
// the nodes (sentinel included), the byte sets and the ids, each section
// laid out exactly as Trie's slices are in a little-endian machine's
// memory, so a guest reads them in place.
const (
	trieMagic      = "DWT1"
	trieHeaderSize = 16
	trieNodeSize   = int(unsafe.Sizeof(TrieNode{}))
	byteSetSize    = int(unsafe.Sizeof(ByteSet{}))
)

// AppendABI appends t in the ABI's trie format.
func (t *Trie) AppendABI(b []byte) []byte {
	le := binary.LittleEndian
	b = append(b, trieMagic...)
	b = le.AppendUint32(b, uint32(t.Len()))
	b = le.AppendUint32(b, uint32(len(t.Sets)))
	b = le.AppendUint32(b, uint32(len(t.IDs)))
	for _, n := range t.Nodes {
		b = le.AppendUint32(b, n.End)
		b = le.AppendUint32(b, n.First)
		b = le.AppendUint32(b, n.Below)
		b = le.AppendUint16(b, n.Depth)
		b = append(b, n.Byte, 0)
	}
	for _, s := range t.Sets {
		for _, w := range s {
			b = le.AppendUint64(b, w)
		}
	}
	for _, id := range t.IDs {
		b = le.AppendUint32(b, uint32(id))
	}
	return b
}

// TrieFromBytes returns the trie that b holds in the ABI's trie format,
// reading b in place (b must stay unchanged while the trie is used). b
// must be 8-byte aligned; the machine must be little-endian, as
// WebAssembly is. The nodes are trusted (the host built them); only the
// sizes are checked.
func TrieFromBytes(b []byte) (*Trie, error) {
	le := binary.LittleEndian
	if len(b) < trieHeaderSize || string(b[:4]) != trieMagic {
		return nil, fmt.Errorf("trie: no %s header", trieMagic)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, fmt.Errorf("trie: read in place needs a little-endian machine")
	}
	if uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		return nil, fmt.Errorf("trie: buffer not 8-byte aligned")
	}
	nodes, sets, ids := int(le.Uint32(b[4:])), int(le.Uint32(b[8:])), int(le.Uint32(b[12:]))
	size := trieHeaderSize + (nodes+1)*trieNodeSize + sets*byteSetSize + ids*4
	if sets < 1 || len(b) != size {
		return nil, fmt.Errorf("trie: %d bytes for %d nodes, %d sets and %d ids, want %d", len(b), nodes, sets, ids, size)
	}
	off := trieHeaderSize
	t := &Trie{Nodes: unsafe.Slice((*TrieNode)(unsafe.Pointer(&b[off])), nodes+1)}
	off += (nodes + 1) * trieNodeSize
	t.Sets = unsafe.Slice((*ByteSet)(unsafe.Pointer(&b[off])), sets)
	off += sets * byteSetSize
	if ids > 0 {
		t.IDs = unsafe.Slice((*int32)(unsafe.Pointer(&b[off])), ids)
	}
	if int(t.Nodes[nodes].First) != ids {
		return nil, fmt.Errorf("trie: sentinel node points at id %d of %d", t.Nodes[nodes].First, ids)
	}
	return t, nil
}
