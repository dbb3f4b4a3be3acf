package tokenizer

import (
	"hash/maphash"
	"math/bits"
)

// The vocabulary and the merges are open-addressing hash tables over flat
// arrays, written once at load and only read after: Go maps of Llama 3's
// 128,000 strings and 280,000 pairs were most of a cached load (each
// insert a probe of a table several times the L2's size, and the
// vocabulary's duplicates a lookup before each insert), a fifth of a new
// chat's first token. Linear probing, at most two thirds full;
// hand-written, as the standard library has no table that can be built
// this way.

// strTable maps strings to ids; of equal strings the lowest id stays.
type strTable struct {
	seed  maphash.Seed
	keys  []string
	ids   []int32
	slots []int32 // 0 empty, or an entry's index plus one
	mask  uint64
}

// newStrTable makes a table for up to n entries.
func newStrTable(n int) *strTable {
	size := tableSize(n)
	return &strTable{
		seed:  maphash.MakeSeed(),
		keys:  make([]string, 0, n),
		ids:   make([]int32, 0, n),
		slots: make([]int32, size),
		mask:  uint64(size - 1),
	}
}

// tableSize is the least power of two at least 3n/2 (and 16): at most
// two thirds full.
func tableSize(n int) int { return 1 << max(4, bits.Len(uint(n+n/2))) }

// add enters key with id, or lowers key's id to id. The table must have
// room (newStrTable's n).
func (t *strTable) add(key string, id int32) {
	for i := maphash.String(t.seed, key) & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i] - 1
		if e < 0 {
			t.keys, t.ids = append(t.keys, key), append(t.ids, id)
			t.slots[i] = int32(len(t.keys))
			return
		}
		if t.keys[e] == key {
			t.ids[e] = min(t.ids[e], id)
			return
		}
	}
}

func (t *strTable) get(key string) (int32, bool) {
	for i := maphash.String(t.seed, key) & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i] - 1
		if e < 0 {
			return 0, false
		}
		if t.keys[e] == key {
			return t.ids[e], true
		}
	}
}

// pairTable maps pairKey(left, right) to the pair's merge; of two merges
// of one pair the first entered stays.
type pairTable struct {
	slots []pairSlot
	mask  uint64
	shift uint
}

type pairSlot struct {
	key uint64 // pairKey plus one; 0 empty
	m   merge
}

// newPairTable makes a table for up to n merges.
func newPairTable(n int) pairTable {
	size := tableSize(n)
	return pairTable{slots: make([]pairSlot, size), mask: uint64(size - 1), shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

// home is key's first slot: Fibonacci hashing, the high bits of a
// multiply, which spreads the ids' low bits over the whole table.
func (t *pairTable) home(key uint64) uint64 { return key * 0x9e3779b97f4a7c15 >> t.shift }

// add enters m for key unless key has a merge already.
func (t *pairTable) add(key uint64, m merge) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case 0:
			t.slots[i] = pairSlot{key + 1, m}
			return
		case key + 1:
			return
		}
	}
}

// get finds key's merge. (A key of two ids −1, whose plus one is 0,
// finds none: the empty case comes first.)
func (t *pairTable) get(key uint64) (merge, bool) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case 0:
			return merge{}, false
		case key + 1:
			return t.slots[i].m, true
		}
	}
}
