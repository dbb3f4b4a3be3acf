// Package abi is the wire format of the controller ABI
// (controllers/ABI.md): its version, the result record dw_step returns,
// the mask, the vocabulary and the token trie as laid out in a guest's
// memory, and the imports' error values. The host (package controllers)
// and the Go guest SDK (controllers/sdk) both encode and decode through
// it, so that the two sides cannot disagree on a byte.
//
// It holds layouts only, no behaviour, and imports nothing but the
// standard library: it is compiled into every Go controller.
package abi

import (
	"encoding/binary"
	"math"
)

// Version is the version of ABI.md spoken on both sides: dw_abi_version
// returns it. A host takes modules of MinVersion to Version and refuses
// others.
const Version = 3

// MinVersion is the oldest version a host still takes: version 2, which
// is version 3 without FlagFail.
const MinVersion = 2

// Flag bits of the result record's flags word.
const (
	FlagMask        uint32 = 1 << 0 // MaskPtr points to an allowed-token bitset
	FlagStop        uint32 = 1 << 1 // end the reply after any forced tokens
	FlagTemperature uint32 = 1 << 2 // Temperature holds this step's temperature
	FlagForce       uint32 = 1 << 3 // ForcePtr, ForceLen hold tokens to append
	FlagBacktrack   uint32 = 1 << 4 // Backtrack holds how many tokens to take back
	FlagFail        uint32 = 1 << 5 // the reply cannot go on under the constraint: it ends as the controller's failure (version 3)

	// KnownFlags are the bits of this version; a record with any other
	// is malformed.
	KnownFlags = FlagsV2 | FlagFail
	// FlagsV2 are the bits of version 2.
	FlagsV2 = FlagMask | FlagStop | FlagTemperature | FlagForce | FlagBacktrack
)

// RecordSize is the size in bytes of the result record. The record and
// every pointer in it are 4-byte aligned.
const RecordSize = 24

// MaxForce is the most tokens one record may force; a record that
// forces more is malformed.
const MaxForce = 4096

// Record is the result record dw_step returns the address of. A field
// whose flag is unset is not read.
type Record struct {
	Flags uint32
	// MaskPtr, with FlagMask, is the address of MaskWords(n_vocab) u32
	// words: token t is allowed when bit t%32 of word t/32 is set.
	MaskPtr uint32
	// Backtrack, with FlagBacktrack, is how many reply tokens to take
	// back.
	Backtrack uint32
	// ForcePtr and ForceLen, with FlagForce, are the address and number
	// of the i32 token ids to append.
	ForcePtr, ForceLen uint32
	// Temperature, with FlagTemperature, is this step's sampling
	// temperature (0: greedy).
	Temperature float32
}

// Append appends r's RecordSize bytes to dst.
func (r Record) Append(dst []byte) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, r.Flags)
	dst = le.AppendUint32(dst, r.MaskPtr)
	dst = le.AppendUint32(dst, r.Backtrack)
	dst = le.AppendUint32(dst, r.ForcePtr)
	dst = le.AppendUint32(dst, r.ForceLen)
	return le.AppendUint32(dst, math.Float32bits(r.Temperature))
}

// ReadRecord reads the record that b starts with; b holds at least
// RecordSize bytes.
func ReadRecord(b []byte) Record {
	le := binary.LittleEndian
	_ = b[RecordSize-1]
	return Record{
		Flags:       le.Uint32(b[0:]),
		MaskPtr:     le.Uint32(b[4:]),
		Backtrack:   le.Uint32(b[8:]),
		ForcePtr:    le.Uint32(b[12:]),
		ForceLen:    le.Uint32(b[16:]),
		Temperature: math.Float32frombits(le.Uint32(b[20:])),
	}
}

// MaskWords is the number of u32 words of a mask over n token ids (the
// bits past n in the last word are ignored).
func MaskWords(n int) int { return (n + 31) / 32 }

// Error values of the imports that return an i32. Every negative value
// is an error.
const (
	// ErrRefused: the host has no answer: kv_get's key is absent,
	// kv_set's or kv_append's write is over the limits, there is no store
	// yet (dw_load) or no tokenizer.
	ErrRefused = -1
	// ErrOutside: a buffer the call was given (pointer and length) lies
	// outside the guest's memory.
	ErrOutside = -2
)

// DescriptionSize is the size in bytes of the description record that
// the optional dw_describe export returns the address of (4-byte
// aligned).
const DescriptionSize = 12

// ArgRequired is the description's flag bit that says the controller
// needs an argument: the host refuses an empty one before dw_init.
const ArgRequired uint32 = 1 << 0

// MaxDescription is the most bytes of a description's text; a longer
// one is malformed.
const MaxDescription = 256

// Description is the record dw_describe returns the address of: what
// argument the controller takes, in one line of UTF-8 for the user
// ("a Go regular expression, which the whole reply matches").
type Description struct {
	// Flags holds ArgRequired, or 0.
	Flags uint32
	// TextPtr and TextLen are the address and length of the text.
	TextPtr, TextLen uint32
}

// Append appends d's DescriptionSize bytes to dst.
func (d Description) Append(dst []byte) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, d.Flags)
	dst = le.AppendUint32(dst, d.TextPtr)
	return le.AppendUint32(dst, d.TextLen)
}

// ReadDescription reads the description that b starts with; b holds at
// least DescriptionSize bytes.
func ReadDescription(b []byte) Description {
	le := binary.LittleEndian
	_ = b[DescriptionSize-1]
	return Description{Flags: le.Uint32(b[0:]), TextPtr: le.Uint32(b[4:]), TextLen: le.Uint32(b[8:])}
}
