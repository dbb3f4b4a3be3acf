package gguf

import (
	"fmt"
	"iter"
)

// KV is one metadata key-value pair. Value holds one of the Go types
// that stand for GGUF's value types: uint8, int8, uint16, int16, uint32,
// int32, uint64, int64, float32, float64, bool, string; an array is a
// slice of one of these ([]string, []int32, ...), and an array of arrays
// is a []any whose elements are arrays. Open gives values in these types
// and Write takes only these.
type KV struct {
	Key   string
	Value any
}

// Metadata is a file's key-value pairs, in file order, with lookup by
// key. The accessors return an error naming the key and what was wanted
// when the key is missing or holds another type. The zero Metadata is
// empty.
type Metadata struct {
	kvs   []KV
	index map[string]int
}

// newMetadata indexes kvs, whose keys are distinct.
func newMetadata(kvs []KV) Metadata {
	index := make(map[string]int, len(kvs))
	for i, kv := range kvs {
		index[kv.Key] = i
	}
	return Metadata{kvs: kvs, index: index}
}

// Len is the number of pairs.
func (m Metadata) Len() int { return len(m.kvs) }

// All yields the pairs in file order.
func (m Metadata) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, kv := range m.kvs {
			if !yield(kv.Key, kv.Value) {
				return
			}
		}
	}
}

// Get is the value of key, as KV describes it.
func (m Metadata) Get(key string) (any, bool) {
	i, ok := m.index[key]
	if !ok {
		return nil, false
	}
	return m.kvs[i].Value, true
}

// Has reports whether key is present.
func (m Metadata) Has(key string) bool {
	_, ok := m.index[key]
	return ok
}

// lookup is key's value, or an error naming the key and want.
func (m Metadata) lookup(key, want string) (any, error) {
	v, ok := m.Get(key)
	if !ok {
		return nil, fmt.Errorf("no metadata key %q (want %s)", key, want)
	}
	return v, nil
}

func wrongType(key string, v any, want string) error {
	return fmt.Errorf("metadata key %q is %s, want %s", key, TypeName(v), want)
}

// String is key's value, which must be a string.
func (m Metadata) String(key string) (string, error) {
	return get[string](m, key, "a string")
}

// Bool is key's value, which must be a bool.
func (m Metadata) Bool(key string) (bool, error) {
	return get[bool](m, key, "a bool")
}

// Strings is key's value, which must be an array of strings.
func (m Metadata) Strings(key string) ([]string, error) {
	return get[[]string](m, key, "an array of strings")
}

// Int32s is key's value, which must be an array of int32.
func (m Metadata) Int32s(key string) ([]int32, error) {
	return get[[]int32](m, key, "an array of int32")
}

// Float32s is key's value, which must be an array of float32.
func (m Metadata) Float32s(key string) ([]float32, error) {
	return get[[]float32](m, key, "an array of float32")
}

func get[T any](m Metadata, key, want string) (T, error) {
	var zero T
	v, err := m.lookup(key, want)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, wrongType(key, v, want)
	}
	return t, nil
}

// Uint is key's value, which may be of any integer type, signed or not,
// as long as it is not negative: writers differ in the type they give a
// count or a token id.
func (m Metadata) Uint(key string) (uint64, error) {
	const want = "a non-negative integer"
	v, err := m.lookup(key, want)
	if err != nil {
		return 0, err
	}
	var s int64
	switch x := v.(type) {
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	case int8:
		s = int64(x)
	case int16:
		s = int64(x)
	case int32:
		s = int64(x)
	case int64:
		s = x
	default:
		return 0, wrongType(key, v, want)
	}
	if s < 0 {
		return 0, fmt.Errorf("metadata key %q is %d, want %s", key, s, want)
	}
	return uint64(s), nil
}

// Float is key's value, which must be a float32 or float64.
func (m Metadata) Float(key string) (float64, error) {
	const want = "a float"
	v, err := m.lookup(key, want)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, wrongType(key, v, want)
}

// TypeName is GGUF's name for the type of a metadata value, as KV
// describes them: "uint32", "string", "array[string]", "array[array]";
// for any other Go value, its Go type.
func TypeName(v any) string {
	if vt, ok := valueTypeOf(v); ok {
		if vt == typeArray {
			et, _ := elemTypeOf(v)
			return "array[" + et.String() + "]"
		}
		return vt.String()
	}
	return fmt.Sprintf("Go type %T", v)
}
