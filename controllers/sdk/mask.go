package sdk

import (
	"math/bits"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// Mask is a set of allowed token ids, laid out as the ABI's bitset: token
// t is allowed when bit t%32 of word t/32 is set.
type Mask struct {
	words []uint32
	n     int
}

// NewMask returns an empty mask over n token ids.
func NewMask(n int) *Mask {
	return &Mask{words: make([]uint32, abi.MaskWords(n)), n: n}
}

// Len returns the number of token ids the mask covers.
func (m *Mask) Len() int { return m.n }

// Allow adds id; ids outside the vocabulary are ignored.
func (m *Mask) Allow(id int32) {
	if id >= 0 && int(id) < m.n {
		m.words[id>>5] |= 1 << (id & 31)
	}
}

// Deny removes id.
func (m *Mask) Deny(id int32) {
	if id >= 0 && int(id) < m.n {
		m.words[id>>5] &^= 1 << (id & 31)
	}
}

// AllowAll allows every id.
func (m *Mask) AllowAll() {
	for i := range m.words {
		m.words[i] = ^uint32(0)
	}
	if r := m.n % 32; r != 0 {
		m.words[len(m.words)-1] = 1<<r - 1
	}
}

// Allowed reports whether id is allowed.
func (m *Mask) Allowed(id int32) bool {
	return id >= 0 && int(id) < m.n && m.words[id>>5]&(1<<(id&31)) != 0
}

// Clear denies every id.
func (m *Mask) Clear() { clear(m.words) }

// Count returns the number of allowed ids.
func (m *Mask) Count() int {
	c := 0
	for _, w := range m.words {
		c += bits.OnesCount32(w)
	}
	return c
}

// Words returns the bitset itself, ceil(Len/32) words, as the host reads
// it.
func (m *Mask) Words() []uint32 { return m.words }

// AppendIDs appends the allowed ids to dst in increasing order.
func (m *Mask) AppendIDs(dst []int32) []int32 {
	for i, w := range m.words {
		for w != 0 {
			dst = append(dst, int32(i<<5+bits.TrailingZeros32(w)))
			w &= w - 1
		}
	}
	return dst
}
