package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// valueType is a metadata value's type in the file (gguf_type).
type valueType uint32

const (
	typeUint8 valueType = iota
	typeInt8
	typeUint16
	typeInt16
	typeUint32
	typeInt32
	typeFloat32
	typeBool
	typeString
	typeArray
	typeUint64
	typeInt64
	typeFloat64
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t valueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// size is the bytes of a fixed-size value, 0 for a string or an array.
func (t valueType) size() int {
	switch t {
	case typeUint8, typeInt8, typeBool:
		return 1
	case typeUint16, typeInt16:
		return 2
	case typeUint32, typeInt32, typeFloat32:
		return 4
	case typeUint64, typeInt64, typeFloat64:
		return 8
	}
	return 0
}

// minBytes is the fewest bytes a value of type t takes in the file: its
// size, a string's length, an array's element type and count.
func (t valueType) minBytes() uint64 {
	switch t {
	case typeString:
		return 8
	case typeArray:
		return 12
	}
	return uint64(t.size())
}

// memBytes is what one value of type t costs in memory, as an element
// of an array (a string's bytes are charged apart): the element itself,
// a string's header, an inner array's interface, slice header and
// allocation.
func (t valueType) memBytes() uint64 {
	switch t {
	case typeString:
		return 16
	case typeArray:
		return 64
	}
	return uint64(t.size())
}

// valueTypeOf is the file type of a Go value as KV describes them.
func valueTypeOf(v any) (valueType, bool) {
	switch v.(type) {
	case uint8:
		return typeUint8, true
	case int8:
		return typeInt8, true
	case uint16:
		return typeUint16, true
	case int16:
		return typeInt16, true
	case uint32:
		return typeUint32, true
	case int32:
		return typeInt32, true
	case float32:
		return typeFloat32, true
	case bool:
		return typeBool, true
	case string:
		return typeString, true
	case uint64:
		return typeUint64, true
	case int64:
		return typeInt64, true
	case float64:
		return typeFloat64, true
	}
	_, ok := elemTypeOf(v)
	return typeArray, ok
}

// elemTypeOf is the element type of an array value.
func elemTypeOf(v any) (valueType, bool) {
	switch v.(type) {
	case []uint8:
		return typeUint8, true
	case []int8:
		return typeInt8, true
	case []uint16:
		return typeUint16, true
	case []int16:
		return typeInt16, true
	case []uint32:
		return typeUint32, true
	case []int32:
		return typeInt32, true
	case []float32:
		return typeFloat32, true
	case []bool:
		return typeBool, true
	case []string:
		return typeString, true
	case []uint64:
		return typeUint64, true
	case []int64:
		return typeInt64, true
	case []float64:
		return typeFloat64, true
	case []any:
		return typeArray, true
	}
	return 0, false
}

// value reads one value of type t, a known type; depth counts the
// arrays it lies in.
func (r *reader) value(t valueType, depth int) (any, error) {
	switch t {
	case typeString:
		return r.str("string", MaxStringLen)
	case typeArray:
		return r.array(depth)
	}
	b, err := r.take(uint64(t.size()), t.String())
	if err != nil {
		return nil, err
	}
	return scalar(t, b), nil
}

// scalar decodes a fixed-size value from b.
func scalar(t valueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case typeUint8:
		return b[0]
	case typeInt8:
		return int8(b[0])
	case typeBool:
		return b[0] != 0 // as llama.cpp reads it
	case typeUint16:
		return le.Uint16(b)
	case typeInt16:
		return int16(le.Uint16(b))
	case typeUint32:
		return le.Uint32(b)
	case typeInt32:
		return int32(le.Uint32(b))
	case typeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case typeUint64:
		return le.Uint64(b)
	case typeInt64:
		return int64(le.Uint64(b))
	}
	return math.Float64frombits(le.Uint64(b))
}

// array reads an array: its element type, its count, its elements. The
// count is checked against MaxArrayLen, the bytes left and the header
// budget before anything is allocated.
func (r *reader) array(depth int) (any, error) {
	start := r.off
	if depth >= MaxArrayDepth {
		return nil, errorAt(start, "arrays nested more than %d deep", MaxArrayDepth)
	}
	et32, err := r.u32("array element type")
	if err != nil {
		return nil, err
	}
	et := valueType(et32)
	if et.minBytes() == 0 {
		return nil, errorAt(start, "array of unknown value type %d", et32)
	}
	n, err := r.u64("array length")
	if err != nil {
		return nil, err
	}
	if n > MaxArrayLen {
		return nil, errorAt(start, "array of %d %ss, more than the %d Driftwood reads", n, et, MaxArrayLen)
	}
	if left := r.left(); n*et.minBytes() > left {
		return nil, errorAt(start, "array of %d %ss needs at least %d bytes, %d are left (truncated?)", n, et, n*et.minBytes(), left)
	}
	if err := r.charge(n*et.memBytes(), start); err != nil {
		return nil, err
	}
	if sz := et.size(); sz > 0 {
		b, _ := r.take(n*uint64(sz), "") // checked above
		return scalars(et, b, int(n)), nil
	}
	switch et {
	case typeString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = r.str("string", MaxStringLen); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out := make([]any, n)
	for i := range out {
		if out[i], err = r.array(depth + 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scalars decodes n fixed-size values of type t from b.
func scalars(t valueType, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case typeUint8:
		out := make([]uint8, n)
		copy(out, b)
		return out
	case typeInt8:
		return decodeEach(b, 1, n, func(b []byte) int8 { return int8(b[0]) })
	case typeBool:
		return decodeEach(b, 1, n, func(b []byte) bool { return b[0] != 0 })
	case typeUint16:
		return decodeEach(b, 2, n, le.Uint16)
	case typeInt16:
		return decodeEach(b, 2, n, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case typeUint32:
		return decodeEach(b, 4, n, le.Uint32)
	case typeInt32:
		return decodeEach(b, 4, n, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case typeFloat32:
		return decodeEach(b, 4, n, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case typeUint64:
		return decodeEach(b, 8, n, le.Uint64)
	case typeInt64:
		return decodeEach(b, 8, n, func(b []byte) int64 { return int64(le.Uint64(b)) })
	}
	return decodeEach(b, 8, n, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
}

func decodeEach[T any](b []byte, size, n int, f func([]byte) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = f(b[i*size:])
	}
	return out
}
