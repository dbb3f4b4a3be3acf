//go:build wasip1

package sdk

import "unsafe"

//go:wasmimport driftwood log
func hostLog(ptr unsafe.Pointer, n int32)

//go:wasmimport driftwood kv_get
func hostKVGet(keyPtr unsafe.Pointer, keyLen int32, bufPtr unsafe.Pointer, bufCap int32) int32

//go:wasmimport driftwood kv_set
func hostKVSet(keyPtr unsafe.Pointer, keyLen int32, valPtr unsafe.Pointer, valLen int32) int32

//go:wasmimport driftwood kv_append
func hostKVAppend(keyPtr unsafe.Pointer, keyLen int32, valPtr unsafe.Pointer, valLen int32) int32

//go:wasmimport driftwood tokenize
func hostTokenize(textPtr unsafe.Pointer, textLen int32, outPtr unsafe.Pointer, outCap int32) int32

//go:wasmimport driftwood trie
func hostTrie(bufPtr unsafe.Pointer, bufCap int32) int32

// hostTrieOf returns the host's token trie, read in place from a buffer
// the trie import fills, or nil (then the SDK builds its own).
func hostTrieOf() *Trie {
	n := hostTrie(nil, 0)
	if n <= 0 {
		return nil
	}
	words := make([]uint64, (n+7)/8) // TrieFromBytes wants 8-byte alignment
	if hostTrie(unsafe.Pointer(&words[0]), n) != n {
		return nil
	}
	t, err := TrieFromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n))
	if err != nil {
		wasmHost{}.Log("sdk: the host's " + err.Error())
		return nil
	}
	return t
}

// wasmHost is the Host behind the driftwood imports.
type wasmHost struct{}

func (wasmHost) Log(msg string) {
	hostLog(unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

func (wasmHost) KVGet(key string) ([]byte, bool) {
	buf := make([]byte, 256)
	for {
		n := hostKVGet(unsafe.Pointer(unsafe.StringData(key)), int32(len(key)), data(buf), int32(len(buf)))
		switch {
		case n < 0:
			return nil, false
		case int(n) <= len(buf):
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}

func (wasmHost) KVSet(key string, val []byte) bool {
	return hostKVSet(unsafe.Pointer(unsafe.StringData(key)), int32(len(key)), data(val), int32(len(val))) == 0
}

func (wasmHost) KVAppend(key string, val []byte) bool {
	return hostKVAppend(unsafe.Pointer(unsafe.StringData(key)), int32(len(key)), data(val), int32(len(val))) == 0
}

func (wasmHost) Tokenize(text string) []int32 {
	out := make([]int32, len(text)+1)
	for {
		n := hostTokenize(unsafe.Pointer(unsafe.StringData(text)), int32(len(text)), unsafe.Pointer(&out[0]), int32(len(out)))
		if n < 0 {
			return nil
		}
		if int(n) <= len(out) {
			return out[:n]
		}
		out = make([]int32, n)
	}
}
