package regex

import (
	"sort"
	"unicode/utf8"
)

// A thread is a uint64: the instruction in the high 32 bits and, in the
// low 32 bits, how far it is into a UTF-8 character. At a character
// boundary the low bits are 0. Otherwise they hold either the bytes read
// so far (bits 0-23) and their count (bits 24-25), or, when every valid
// completion of those bytes matches the instruction, allFlag, the count
// of continuation bytes still to come (bits 24-25) and the range of the
// next one (bits 0-7 and 8-15): the bytes themselves no longer matter,
// which keeps the number of states small.
const (
	countShift = 24
	allFlag    = 1 << 26
)

// advance moves thread t over byte b.
func (d *DFA) advance(t uint64, b byte) (uint64, bool) {
	pc := uint32(t >> 32)
	low := uint32(t)
	if low&allFlag != 0 {
		if b < byte(low) || b > byte(low>>8) {
			return 0, false
		}
		need := low >> countShift & 3
		if need == 1 {
			return uint64(d.prog.Inst[pc].Out) << 32, true
		}
		return allThread(pc, need-1, 0x80, 0xbf), true
	}
	n := int(low >> countShift & 3)
	var buf [utf8.UTFMax]byte
	buf[0], buf[1], buf[2] = byte(low), byte(low>>8), byte(low>>16)
	buf[n] = b
	q := buf[:n+1]
	size := seqLen(q[0])
	if size == 0 || n > 0 && !validCont(q[0], n, b) {
		return 0, false
	}
	ranges := d.ranges[pc]
	if len(q) == size {
		r, _ := utf8.DecodeRune(q)
		if overlap(ranges, r, r) == none {
			return 0, false
		}
		return uint64(d.prog.Inst[pc].Out) << 32, true
	}
	lo, hi := prefixRange(q, size)
	switch overlap(ranges, lo, hi) {
	case none:
		return 0, false
	case inside:
		lo, hi := contRange(q[0], len(q))
		return allThread(pc, uint32(size-len(q)), lo, hi), true
	}
	return uint64(pc)<<32 | uint64(len(q))<<countShift | uint64(q[0]) | uint64(buf[1])<<8 | uint64(buf[2])<<16, true
}

// allThread returns the thread at pc that needs need more continuation
// bytes, all of whose completions match, the next one in [lo, hi].
func allThread(pc, need uint32, lo, hi byte) uint64 {
	return uint64(pc)<<32 | allFlag | uint64(need)<<countShift | uint64(hi)<<8 | uint64(lo)
}

// seqLen returns the length of the UTF-8 sequence that lead starts, or 0
// when lead cannot start one.
func seqLen(lead byte) int {
	switch {
	case lead < 0x80:
		return 1
	case lead >= 0xc2 && lead <= 0xdf:
		return 2
	case lead >= 0xe0 && lead <= 0xef:
		return 3
	case lead >= 0xf0 && lead <= 0xf4:
		return 4
	}
	return 0
}

// contRange returns the bytes allowed at position i (1 or more) of a
// sequence led by lead.
func contRange(lead byte, i int) (lo, hi byte) {
	if i == 1 {
		switch lead {
		case 0xe0:
			return 0xa0, 0xbf
		case 0xed:
			return 0x80, 0x9f
		case 0xf0:
			return 0x90, 0xbf
		case 0xf4:
			return 0x80, 0x8f
		}
	}
	return 0x80, 0xbf
}

func validCont(lead byte, i int, b byte) bool {
	lo, hi := contRange(lead, i)
	return b >= lo && b <= hi
}

// prefixRange returns the smallest and largest runes whose size-byte
// encoding starts with q.
func prefixRange(q []byte, size int) (lo, hi rune) {
	var a, z [utf8.UTFMax]byte
	copy(a[:], q)
	copy(z[:], q)
	for i := len(q); i < size; i++ {
		a[i], z[i] = contRange(q[0], i)
	}
	lo, _ = utf8.DecodeRune(a[:size])
	hi, _ = utf8.DecodeRune(z[:size])
	return lo, hi
}

// How a range of runes meets an instruction's ranges.
const (
	none    = iota // no rune in common
	partial        // some in common
	inside         // all inside
)

// overlap compares [lo, hi] with sorted, disjoint pairs of ranges.
func overlap(ranges []rune, lo, hi rune) int {
	k := sort.Search(len(ranges)/2, func(k int) bool { return ranges[2*k+1] >= lo })
	if k == len(ranges)/2 || ranges[2*k] > hi {
		return none
	}
	if ranges[2*k] <= lo && hi <= ranges[2*k+1] {
		return inside
	}
	return partial
}
