package tokenizer

import (
	"strings"
	"sync"
)

// merge is one entry of the merge list: its rank (position in the list,
// lower merges first) and the id of the token it produces.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one token of a word being merged, in a doubly linked list
// indexed by the position of its first byte.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends
	dead       bool
}

// candidate is a possible merge of the symbols at pos and its successor,
// valid while both still hold the ids left and right.
type candidate struct {
	rank, pos   int32
	left, right int32
	id          int32
}

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.pos < d.pos)
}

// scratch holds the reusable buffers of one merge run.
type scratch struct {
	syms []symbol
	heap []candidate
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// bpe appends the ids of one pre-tokenized piece (raw bytes) to dst.
func (t *Tokenizer) bpe(dst []int32, piece string) []int32 {
	if len(piece) == 1 {
		if id := t.byteIDs[piece[0]]; id >= 0 {
			return append(dst, id)
		}
		return dst
	}
	if t.ignoreMerges {
		// ignore_merges: a piece that is itself a vocabulary token is
		// taken whole, even when the merges would not build it.
		if id, ok := t.vocab.get(piece); ok {
			return append(dst, id)
		}
	}
	if ids, ok := t.cache.get(piece); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.mergeWord(dst, piece)
	t.cache.put(piece, dst[start:])
	return dst
}

// mergeWord runs the BPE merges on piece: starting from one symbol per
// byte (mergeSymbols), it repeatedly applies the adjacent pair with the lowest merge rank,
// the leftmost one on ties. A min-heap of candidate pairs with lazy
// invalidation keeps this O(n log n) in the length of the piece. A byte
// the vocabulary lacks gives no token: it is dropped before the merges
// (Hugging Face), or with byteGaps kept as a symbol that joins no merge
// and dropped after them (llama.cpp).
func (t *Tokenizer) mergeWord(dst []int32, piece string) []int32 {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	syms := s.syms[:0]
	for i := 0; i < len(piece); i++ {
		id := t.byteIDs[piece[i]]
		if id < 0 && !t.byteGaps {
			continue
		}
		syms = append(syms, symbol{id: id, prev: int32(len(syms) - 1), next: int32(len(syms) + 1)})
	}
	if len(syms) == 0 {
		return dst
	}
	return t.mergeSymbols(dst, s, syms)
}

// mergeSymbols runs the merges over syms, a non-empty list linked in
// order (the last next is fixed here), and appends the resulting ids to
// dst. It keeps syms and its heap in s for reuse.
func (t *Tokenizer) mergeSymbols(dst []int32, s *scratch, syms []symbol) []int32 {
	n := len(syms)
	syms[n-1].next = -1
	h := s.heap[:0]
	for i := 0; i+1 < n; i++ {
		h = t.pushCandidate(h, syms, int32(i))
	}
	for len(h) > 0 {
		c := h[0]
		h = popHeap(h)
		left := &syms[c.pos]
		if left.dead || left.id != c.left || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		if right.id != c.right {
			continue
		}
		left.id = c.id
		right.dead = true
		left.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = c.pos
		}
		if left.prev >= 0 {
			h = t.pushCandidate(h, syms, left.prev)
		}
		if left.next >= 0 {
			h = t.pushCandidate(h, syms, c.pos)
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		if syms[i].id >= 0 {
			dst = append(dst, syms[i].id)
		}
	}
	s.syms, s.heap = syms, h
	return dst
}

// pushCandidate adds the merge of the symbol at pos with its successor to
// the heap when the merge list has it.
func (t *Tokenizer) pushCandidate(h []candidate, syms []symbol, pos int32) []candidate {
	a, b := syms[pos].id, syms[syms[pos].next].id
	m, ok := t.merges.get(pairKey(a, b))
	if !ok {
		return h
	}
	h = append(h, candidate{rank: m.rank, pos: pos, left: a, right: b, id: m.id})
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// popHeap removes the smallest candidate, h[0].
func popHeap(h []candidate) []candidate {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return h
}

// cacheLimit bounds the word cache; when full it is emptied and refilled.
const cacheLimit = 1 << 16

// wordCache remembers the merge result of recent pieces. It is safe for
// concurrent use.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func (c *wordCache) get(piece string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.m[piece]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(piece string, ids []int32) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheLimit {
		c.m = make(map[string][]int32)
	}
	// Clone the key: piece points into the caller's text.
	c.m[strings.Clone(piece)] = append([]int32(nil), ids...)
	c.mu.Unlock()
}
