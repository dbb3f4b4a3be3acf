package sdk

import (
	"encoding/binary"
	"math"
)

// Flag bits of the result record's flags word.
const (
	FlagMask        = 1 << 0 // mask_ptr points to an allowed-token bitset
	FlagStop        = 1 << 1 // end the reply after any forced tokens
	FlagTemperature = 1 << 2 // temperature holds this step's temperature
	FlagForce       = 1 << 3 // force_ptr/force_len hold tokens to append
	FlagBacktrack   = 1 << 4 // backtrack holds how many tokens to take back
)

// ResultSize is the size in bytes of the result record dw_step returns.
const ResultSize = 24

// Byte offsets of the result record's fields.
const (
	OffsetFlags       = 0
	OffsetMask        = 4
	OffsetBacktrack   = 8
	OffsetForce       = 12
	OffsetForceLen    = 16
	OffsetTemperature = 20
)

// Result is a controller's answer for one step. The host applies it in
// this order: take back Backtrack tokens, append Force, end the reply if
// Stop, otherwise sample among the tokens Mask allows (all when nil) at
// Temperature (when SetTemperature).
type Result struct {
	// Mask, when not nil, holds the tokens that may be sampled. An empty
	// mask ends the reply.
	Mask *Mask
	// Stop ends the reply after the forced tokens.
	Stop bool
	// Backtrack takes back this many reply tokens; the controller must
	// already have forgotten them.
	Backtrack int
	// Force appends these tokens without sampling; they come back in the
	// next step's appended tokens.
	Force []int32
	// Temperature is this step's sampling temperature (0: greedy) when
	// SetTemperature is true.
	Temperature    float32
	SetTemperature bool
}

// Reset empties r: no constraint.
func (r *Result) Reset() { *r = Result{} }

// Flags returns the record's flags word for r.
func (r *Result) Flags() uint32 {
	var f uint32
	if r.Mask != nil {
		f |= FlagMask
	}
	if r.Stop {
		f |= FlagStop
	}
	if r.SetTemperature {
		f |= FlagTemperature
	}
	if len(r.Force) > 0 {
		f |= FlagForce
	}
	if r.Backtrack > 0 {
		f |= FlagBacktrack
	}
	return f
}

// AppendRecord appends r's 24-byte result record to dst, given where the
// mask words and the forced tokens lie in guest memory.
func (r *Result) AppendRecord(dst []byte, maskPtr, forcePtr uint32) []byte {
	le := binary.LittleEndian
	flags := r.Flags()
	if flags&FlagMask == 0 {
		maskPtr = 0
	}
	if flags&FlagForce == 0 {
		forcePtr = 0
	}
	dst = le.AppendUint32(dst, flags)
	dst = le.AppendUint32(dst, maskPtr)
	dst = le.AppendUint32(dst, uint32(max(r.Backtrack, 0)))
	dst = le.AppendUint32(dst, forcePtr)
	dst = le.AppendUint32(dst, uint32(len(r.Force)))
	return le.AppendUint32(dst, math.Float32bits(r.Temperature))
}
