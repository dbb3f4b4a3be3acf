package cpu

import (
	"testing"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestImportInPlace: a state whose memory may be written (Hold, as a
// session's copy-on-write mapping) has its whole blocks used in place,
// held once and let go of once: when the cache closes, or when a later
// import replaces them. A state without Hold is copied.
func TestImportInPlace(t *testing.T) {
	m, err := engine.LoadModel(golden.ModelDir("tiny-hd32-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := New(m, Options{Threads: 1, KVType: engine.KVF16})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src, _ := b.NewCache(512)
	ids := make([]int32, 300)
	for i := range ids {
		ids[i] = int32(i % m.Config.VocabSize)
	}
	if err := b.Forward(src, ids, make([]float32, m.Config.VocabSize)); err != nil {
		t.Fatal(err)
	}
	kv, err := src.Export()
	if err != nil {
		t.Fatal(err)
	}
	holds, releases := 0, 0
	kv.Hold = func() func() error {
		holds++
		return func() error { releases++; return nil }
	}
	inPlace := func(c engine.Cache, s *engine.KVState) bool {
		return unsafe.Pointer(&c.(*cache).k[1].h[0][0]) == unsafe.Pointer(&s.K[1][0])
	}
	c, _ := b.NewCache(512)
	if err := c.Import(kv); err != nil {
		t.Fatal(err)
	}
	if !inPlace(c, kv) || holds != 1 || releases != 0 {
		t.Errorf("in place %v, held %d times, let go %d times; want in place, 1, 0", inPlace(c, kv), holds, releases)
	}
	copied := *kv
	copied.Hold = nil
	if err := c.Import(&copied); err != nil {
		t.Fatal(err)
	}
	if inPlace(c, kv) || releases != 1 {
		t.Errorf("a state without Hold: in place %v, let go %d times; want copied, 1", inPlace(c, kv), releases)
	}
	if err := c.Import(kv); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if holds != 2 || releases != 2 {
		t.Errorf("after close: held %d, let go %d; want 2, 2", holds, releases)
	}
}
