package mlxbridge

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// cpuTol bounds CPU-vs-MLX differences: both compute in float32, in a
// different order.
const cpuTol = 1e-3

// cpuBackend is the CPU backend on its float kernels, which MLX's f32
// activations are compared with.
func cpuBackend(t testing.TB, f *fixture) engine.Backend {
	b, err := cpu.New(f.m, cpu.Options{KVType: engine.KVF32, Kernels: "float"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func forward(t testing.TB, b engine.Backend, c engine.Cache, tokens []int32, n int) []float32 {
	t.Helper()
	logits := make([]float32, n)
	if err := b.Forward(c, tokens, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}

// roundTrip saves s as a session snapshot and opens it again, as `run
// --session` does between two processes.
func roundTrip(t *testing.T, f *fixture, s *engine.KVState, tokens []int32) *engine.KVState {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.safetensors")
	if err := sessions.Save(path, sessions.Meta{Model: "test", ModelFingerprint: f.m.Fingerprint, Tokens: tokens}, s); err != nil {
		t.Fatal(err)
	}
	snap, err := sessions.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap.KV
}

// TestSessionExchangeWithCPU saves a session on one backend and resumes
// it on the other, both ways: the next token's logits agree.
func TestSessionExchangeWithCPU(t *testing.T) {
	for _, name := range []string{"tiny-f32", "tiny-bf16", "tiny-mlx-q4", "tiny-hd32-f32"} {
		t.Run(name, func(t *testing.T) {
			f := load(t, name, Options{KVType: engine.KVF32})
			cb := cpuBackend(t, f)
			vocab, window := f.m.Config.VocabSize, f.m.Config.MaxPositionEmbeddings
			prompt, next := f.g.Prompt.IDs, f.g.Greedy.Tokens[:1]
			for _, dir := range []struct {
				from, to engine.Backend
			}{{cb, f.b}, {f.b, cb}} {
				src, _ := dir.from.NewCache(window)
				forward(t, dir.from, src, prompt, vocab)
				s, err := src.Export()
				if err != nil {
					t.Fatal(err)
				}
				dst, _ := dir.to.NewCache(window)
				if err := dst.Import(roundTrip(t, f, s, prompt)); err != nil {
					t.Fatal(err)
				}
				if dst.Len() != len(prompt) {
					t.Fatalf("%s → %s: imported Len %d, want %d", dir.from.Name(), dir.to.Name(), dst.Len(), len(prompt))
				}
				want := forward(t, dir.from, src, next, vocab)
				got := forward(t, dir.to, dst, next, vocab)
				if d := maxDiff(got, want); d > cpuTol {
					t.Errorf("%s → %s: next logits differ by %.2g", dir.from.Name(), dir.to.Name(), d)
				}
			}
		})
	}
}

// TestExportMatchesCPU compares the exported KV states themselves, and
// imports a bf16 copy of one into both backends.
func TestExportMatchesCPU(t *testing.T) {
	f := load(t, "tiny-mlx-q8", Options{KVType: engine.KVF32})
	cb := cpuBackend(t, f)
	vocab, window := f.m.Config.VocabSize, f.m.Config.MaxPositionEmbeddings
	mc, _ := f.b.NewCache(window)
	cc, _ := cb.NewCache(window)
	forward(t, f.b, mc, f.g.Prompt.IDs, vocab)
	forward(t, cb, cc, f.g.Prompt.IDs, vocab)
	ms, err := mc.Export()
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := cc.Export()
	if ms.Len != cs.Len || ms.KVHeads != cs.KVHeads || ms.HeadDim != cs.HeadDim || ms.DType != safetensors.F32 {
		t.Fatalf("MLX exported %+v, CPU %+v", ms, cs)
	}
	for l := range ms.K {
		if d := maxDiff(floats(ms.K[l]), floats(cs.K[l])); d > 1e-4 {
			t.Errorf("layer %d keys differ by %.2g", l, d)
		}
		if d := maxDiff(floats(ms.V[l]), floats(cs.V[l])); d > 1e-4 {
			t.Errorf("layer %d values differ by %.2g", l, d)
		}
	}
	half := toBF16(cs)
	for _, b := range []engine.Backend{f.b, cb} {
		c, _ := b.NewCache(window)
		if err := c.Import(half); err != nil {
			t.Fatal(err)
		}
		if b == f.b {
			mc = c
		} else {
			cc = c
		}
	}
	next := f.g.Greedy.Tokens[:1]
	if d := maxDiff(forward(t, f.b, mc, next, vocab), forward(t, cb, cc, next, vocab)); d > cpuTol {
		t.Errorf("after importing a bf16 state: MLX and CPU differ by %.2g", d)
	}
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func toBF16(s *engine.KVState) *engine.KVState {
	conv := func(b []byte) []byte {
		f := floats(b)
		out := make([]byte, 2*len(f))
		for i, x := range f {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(math.Float32bits(x)>>16))
		}
		return out
	}
	h := &engine.KVState{Len: s.Len, KVHeads: s.KVHeads, HeadDim: s.HeadDim, DType: safetensors.BF16}
	for l := range s.K {
		h.K, h.V = append(h.K, conv(s.K[l])), append(h.V, conv(s.V[l]))
	}
	return h
}

// TestLongSequenceAgainstCPU runs 300 positions (past the cache's first
// growth step) in chunks of 7 and then token by token, against the CPU
// backend, and checks Truncate.
func TestLongSequenceAgainstCPU(t *testing.T) {
	f := load(t, "tiny-mlx-q4-g64", Options{MaxBatch: 7, KVType: engine.KVF32})
	cb := cpuBackend(t, f)
	vocab, window := f.m.Config.VocabSize, f.m.Config.MaxPositionEmbeddings
	ids := make([]int32, 300)
	for i := range ids {
		ids[i] = int32(i*37%(vocab-20) + 3)
	}
	mc, _ := f.b.NewCache(window)
	cc, _ := cb.NewCache(window)
	got := forward(t, f.b, mc, ids[:250], 250*vocab)
	want := forward(t, cb, cc, ids[:250], 250*vocab)
	if d := maxDiff(got, want); d > cpuTol {
		t.Errorf("250-token prefill in chunks of 7: max |Δ| vs CPU %.2g", d)
	}
	for i := 250; i < 300; i++ {
		got, want = forward(t, f.b, mc, ids[i:i+1], vocab), forward(t, cb, cc, ids[i:i+1], vocab)
		if d := maxDiff(got, want); d > cpuTol {
			t.Fatalf("decode at position %d: max |Δ| vs CPU %.2g", i, d)
		}
	}
	mc.Truncate(260)
	cc.Truncate(260)
	got, want = forward(t, f.b, mc, ids[100:110], vocab), forward(t, cb, cc, ids[100:110], vocab)
	if d := maxDiff(got, want); d > cpuTol || mc.Len() != 270 {
		t.Errorf("after Truncate(260): max |Δ| vs CPU %.2g, Len %d", d, mc.Len())
	}
}
