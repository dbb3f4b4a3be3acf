package controllers

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// KV limits (ABI.md).
const (
	maxKeyLen   = 256
	maxValueLen = 64 << 10
	maxKVTotal  = 1 << 20
)

// kvStore is a conversation's key-value store for its controller: it outlives
// instances and faults, and sessions save it. Safe for concurrent use.
type kvStore struct {
	mu    sync.Mutex
	m     map[string][]byte
	total int             // bytes of keys and values
	dirty map[string]bool // keys written, in a store made by stage
}

// newKVStore returns an empty store.
func newKVStore() *kvStore { return &kvStore{m: map[string][]byte{}} }

// Get returns a copy-free view of key's value; the caller must not keep it
// past the next write.
func (kv *kvStore) Get(key string) ([]byte, bool) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	v, ok := kv.m[key]
	return v, ok
}

// Set stores val (copied) under key.
func (kv *kvStore) Set(key string, val []byte) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.put(key, append([]byte(nil), val...))
}

// Append adds val to key's value, creating it.
func (kv *kvStore) Append(key string, val []byte) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	old := kv.m[key]
	return kv.put(key, append(append(make([]byte, 0, len(old)+len(val)), old...), val...))
}

func (kv *kvStore) put(key string, val []byte) error {
	switch {
	case len(key) == 0 || len(key) > maxKeyLen:
		return fmt.Errorf("kv: key of %d bytes (want 1 to %d)", len(key), maxKeyLen)
	case len(val) > maxValueLen:
		return fmt.Errorf("kv: value of %d bytes exceeds %d", len(val), maxValueLen)
	}
	total := kv.total + len(val)
	if old, ok := kv.m[key]; ok {
		total -= len(old)
	} else {
		total += len(key)
	}
	if total > maxKVTotal {
		return fmt.Errorf("kv: store would hold %d bytes, more than %d", total, maxKVTotal)
	}
	kv.m[key] = val
	kv.total = total
	if kv.dirty != nil {
		kv.dirty[key] = true
	}
	return nil
}

// stage returns a copy of the store that records which keys it writes:
// the dw_init of a controller being switched to runs against it, so that
// a refused switch leaves the conversation's store as it was, and commit
// applies the writes of one that succeeds.
func (kv *kvStore) stage() *kvStore {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return &kvStore{m: maps.Clone(kv.m), total: kv.total, dirty: map[string]bool{}}
}

// commit sets in kv the keys that staged (from stage) wrote, with their
// values there; when they no longer fit the limits (the store changed
// meanwhile), nothing changes and the error says why.
func (kv *kvStore) commit(staged *kvStore) error {
	staged.mu.Lock()
	defer staged.mu.Unlock()
	kv.mu.Lock()
	defer kv.mu.Unlock()
	fresh := &kvStore{m: maps.Clone(kv.m), total: kv.total}
	for _, k := range slices.Sorted(maps.Keys(staged.dirty)) {
		if err := fresh.put(k, staged.m[k]); err != nil {
			return err
		}
	}
	kv.m, kv.total = fresh.m, fresh.total
	return nil
}

// Snapshot copies the store's contents (for saving a session).
func (kv *kvStore) Snapshot() map[string][]byte {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	out := make(map[string][]byte, len(kv.m))
	for k, v := range kv.m {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

// Restore replaces the contents with m (a saved session's), checking the
// limits.
func (kv *kvStore) Restore(m map[string][]byte) error {
	fresh := newKVStore()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := fresh.put(k, append([]byte(nil), m[k]...)); err != nil {
			return err
		}
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.m, kv.total = fresh.m, fresh.total
	return nil
}
