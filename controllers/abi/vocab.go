package abi

import (
	"encoding/binary"
	"slices"
)

// The vocabulary dw_load is given: one entry per token id in order, each
// a u8 of flags, a u16 length, then that many bytes (the token's raw
// bytes; a special token's text), packed back to back without alignment.
const (
	// VocabSpecial is the entry flag of a special token (<|eot_id|>).
	VocabSpecial = 1 << 0
	// VocabEntryHead is the size of an entry before its bytes.
	VocabEntryHead = 3
	// MaxTokenLen is the most bytes an entry holds.
	MaxTokenLen = 0xffff
)

// AppendVocab appends the vocabulary of tokens to dst: tokens[id] is the
// bytes of id (empty for an id without a token), special[id] whether it
// is special (special may be shorter than tokens: missing entries are
// not special). Tokens longer than MaxTokenLen are cut.
func AppendVocab(dst []byte, tokens [][]byte, special []bool) []byte {
	size := 0
	for _, t := range tokens {
		size += VocabEntryHead + min(len(t), MaxTokenLen)
	}
	dst = slices.Grow(dst, size)
	for i, t := range tokens {
		t = t[:min(len(t), MaxTokenLen)]
		var flags byte
		if i < len(special) && special[i] {
			flags |= VocabSpecial
		}
		dst = append(dst, flags)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(t)))
		dst = append(dst, t...)
	}
	return dst
}

// VocabEntry reads the head of the entry that b starts with (b holds at
// least VocabEntryHead bytes): its flags and the length of its bytes,
// which follow the head.
func VocabEntry(b []byte) (flags byte, length int) {
	return b[0], int(binary.LittleEndian.Uint16(b[1:]))
}
