package controllers

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// llama3Vocab is the real 128,256-token vocabulary.
func llama3Vocab(b testing.TB) *vocabulary {
	tok, err := tokenizer.Load(filepath.Join("..", "testdata", "llama3-tokenizer", "tokenizer.json.gz"))
	if err != nil {
		b.Fatal(err)
	}
	return newVocabulary(tok, 128256)
}

// BenchmarkApplyMask is the host's side of a step: counting the mask's
// bits in place and choosing a list or the mask for the sampler.
func BenchmarkApplyMask(b *testing.B) {
	const vocab = 128256
	logits := make([]float32, vocab)
	d := newDriver(nil, nil, nil, nil, nil)
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	dense, runs, sparse := make([]uint32, (vocab+31)/32), make([]uint32, (vocab+31)/32), make([]uint32, (vocab+31)/32)
	for i := range dense {
		dense[i] = rng.Uint32()
		if rng.IntN(4) == 0 {
			runs[i] = math.MaxUint32
		}
	}
	for i := 0; i < 10; i++ {
		id := rng.IntN(vocab)
		sparse[id/32] |= 1 << (id % 32)
	}
	for _, c := range []struct {
		name string
		mask []uint32
	}{{"random-half", dense}, {"runs-quarter", runs}, {"sparse-10", sparse}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				d.applyMask(logits, c.mask)
			}
		})
	}
}

// BenchmarkWasmStep times dw_step of the shipped regex and json
// controllers through the host (worker hand-off, the guest, reading the
// result) on the Llama 3 vocabulary, over a conversation of replies
// sampled uniformly among the allowed tokens, one instance serving them
// all as in the app; it reports the median and 99th percentile step and
// how many steps took over 500 µs. Creating the instance (at the first
// step) is not counted: BenchmarkSwap measures it.
func BenchmarkWasmStep(b *testing.B) {
	vocab := llama3Vocab(b)
	rt := newWasmRuntime(defaultLimits(), b.TempDir())
	defer rt.Close()
	reg, err := newRegistry(rt, shippedFS)
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	// The end of a reply, a user turn and the next assistant header.
	const eot = 128009
	turn := []int32{eot, 128006, 882, 128007, 271, 9906, eot, 128006, 78191, 128007, 271}
	const maxReply = 200
	for _, c := range []struct{ name, arg string }{
		{"regex", `[A-Z][a-z]+( [a-z]+){3,12}\.`},
		{"json", `{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name"]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			mod, err := reg.Get(c.name)
			if err != nil {
				b.Fatal(err)
			}
			d := newDriver(rt, vocab, newKVStore(), nil, nil)
			defer d.Close()
			d.Use(mod, c.arg)
			logits := make([]float32, len(vocab.Tokens))
			rng := rand.New(rand.NewPCG(2, 2))
			seq := []int32{128000, 128006, 882, 128007, 271, 9906, eot, 128006, 78191, 128007, 271}
			replyStart := len(seq)
			d.StartReply(replyStart, maxReply)
			var times []time.Duration
			first, replies := true, 1
			for b.Loop() {
				start := time.Now()
				d.Begin(seq)
				dir := d.End(logits)
				if !first {
					times = append(times, time.Since(start))
				}
				first = false
				clear(logits)
				seq = seq[:len(seq)-min(dir.Backtrack, len(seq)-replyStart)]
				seq = append(seq, dir.Force...)
				next := int32(-1)
				if !dir.Stop {
					next = pick(rng, dir) // after the forced tokens, in the same step (ABI.md)
				}
				if next >= 0 && next != eot && len(seq)-replyStart < maxReply {
					seq = append(seq, next)
					continue
				}
				seq = append(seq, turn...) // the reply ends; the next one starts
				replyStart = len(seq)
				d.StartReply(replyStart, maxReply)
				replies++
			}
			slices.Sort(times)
			slow := len(times) - sort.Search(len(times), func(i int) bool { return times[i] > 500*time.Microsecond })
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(slow), "steps>500µs")
			b.ReportMetric(float64(replies), "replies")
		})
	}
}

// pick samples uniformly among the tokens the directive allows.
func pick(rng *rand.Rand, dir engine.Directive) int32 {
	if dir.Allowed != nil {
		if len(dir.Allowed) == 0 {
			return -1
		}
		return dir.Allowed[rng.IntN(len(dir.Allowed))]
	}
	if dir.Mask == nil {
		return int32(rng.IntN(128000))
	}
	for tries := 0; tries < 1<<20; tries++ {
		if id := rng.IntN(32 * len(dir.Mask)); dir.Mask[id/32]>>(id%32)&1 == 1 {
			return int32(id)
		}
	}
	return -1
}

// BenchmarkSwap is switching to a controller in a running app, on the
// Llama 3 vocabulary:
//
//   - first-use: the shipped module is decompressed, its compiled code
//     comes from the disk cache, and its instance is prepared on the spot
//     (instantiate, _initialize, dw_load), then dw_init and the first
//     step;
//   - switch: its module is loaded and a spare instance is ready (the
//     runtime prepares one in the background after each use and when a
//     switch is asked for), so only dw_init and the first step remain.
//
// The token trie the host builds once per vocabulary is built before the
// timing, as it is in a running app after its first controller. It also
// reports page faults per swap (first touches of a new instance's memory
// cost some 13 µs each on the Firecracker VM these figures were taken on,
// well under 1 µs on a laptop) and the instance's linear memory, which is
// also what a spare holds.
func BenchmarkSwap(b *testing.B) {
	vocab := llama3Vocab(b)
	vocab.trie()
	cache := b.TempDir()
	warm := newWasmRuntime(defaultLimits(), cache)
	for _, name := range []string{"regex", "json"} { // fills the disk cache
		if _, err := warm.LoadFS(shippedFS, name+".wasm.gz"); err != nil {
			b.Fatal(err)
		}
	}
	warm.Close()
	rt := newWasmRuntime(defaultLimits(), cache) // the app's, for its whole run
	defer rt.Close()
	logits := make([]float32, len(vocab.Tokens))
	for _, c := range []struct{ name, mod, arg string }{
		{"regex-word", "regex", `[a-z]+`},
		{"regex-sentence", "regex", `[A-Z][a-z]+( [a-z]+){3,12}\.`},
		{"json-schema", "json", `{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name"]}`},
	} {
		file := c.mod + ".wasm.gz"
		loaded, err := rt.LoadFS(shippedFS, file)
		if err != nil {
			b.Fatal(err)
		}
		for _, firstUse := range []bool{true, false} {
			name := c.name + "/switch"
			if firstUse {
				name = c.name + "/first-use"
			}
			b.Run(name, func(b *testing.B) {
				var before, after syscall.Rusage
				var faults int64
				var memory uintptr
				rt.spares.prewarm(loaded, vocab)
				for b.Loop() {
					b.StopTimer()
					rt.spares.work.Wait() // the spare prepared after the last swap
					if firstUse {
						rt.spares.drop(loaded)
					}
					syscall.Getrusage(syscall.RUSAGE_SELF, &before)
					b.StartTimer()
					mod := loaded
					if firstUse {
						if mod, err = rt.LoadFS(shippedFS, file); err != nil {
							b.Fatal(err)
						}
					}
					d := newDriver(rt, vocab, newKVStore(), nil, nil)
					d.Use(mod, c.arg)
					d.StartReply(1, 1)
					d.Begin([]int32{128000})
					dir := d.End(logits)
					b.StopTimer()
					syscall.Getrusage(syscall.RUSAGE_SELF, &after)
					faults += after.Minflt - before.Minflt
					if dir.Mask == nil && dir.Allowed == nil {
						b.Fatal("no mask after the swap")
					}
					memory = d.inst.mem.DataSize(d.inst.store)
					d.Close()
					if firstUse { // free the spare of this build
						rt.spares.work.Wait()
						rt.spares.forget(mod) // a build never used again
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
				b.ReportMetric(float64(memory)/1e6, "guest-MB")
			})
		}
	}
}

// BenchmarkLoadCached is loading a controller whose compiled module is
// in the disk cache, as the app does at its first use of it in a run:
// reading and hashing the module (shipped: decompressing it from the
// program; file: reading a .wasm of the controllers folder), then the
// cache entry (checked and mapped), the export check and the linker. It
// reports the cache entry's size.
func BenchmarkLoadCached(b *testing.B) {
	cache := b.TempDir()
	rt := newWasmRuntime(defaultLimits(), cache)
	defer rt.Close()
	files := b.TempDir()
	for _, name := range []string{"regex", "json"} {
		first, err := rt.LoadFS(shippedFS, name+".wasm.gz") // fills the cache
		if err != nil {
			b.Fatal(err)
		}
		wasm, err := readFS(shippedFS, name+".wasm.gz")
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(files, name+".wasm")
		if err := os.WriteFile(path, wasm, 0o644); err != nil {
			b.Fatal(err)
		}
		for _, kind := range []string{"shipped", "file"} {
			b.Run(name+"/"+kind, func(b *testing.B) {
				for b.Loop() {
					var m *Module
					if kind == "shipped" {
						m, err = rt.LoadFS(shippedFS, name+".wasm.gz")
					} else {
						m, err = rt.LoadFile(path)
					}
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if m.SHA256 != first.SHA256 {
						b.Fatalf("module %s, want %s", m.SHA256, first.SHA256)
					}
					rt.mu.Lock() // free it now rather than at Close
					rt.modules = slices.DeleteFunc(rt.modules, func(o *Module) bool { return o == m })
					rt.mu.Unlock()
					m.linker.Close()
					m.module.Close()
					b.StartTimer()
				}
				entries, _ := filepath.Glob(filepath.Join(cache, first.SHA256+"-*.cwasm"))
				if len(entries) != 1 {
					b.Fatalf("cache entries %v", entries)
				}
				fi, err := os.Stat(entries[0])
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fi.Size())/1e6, "entry-MB")
			})
		}
	}
}
