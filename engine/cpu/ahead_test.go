package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// measure runs a tuner's measurement with steps that take base[d] at
// distance d, the first round of the fastest choice slowed by an
// outlier that its median must pass over, and returns how often each
// distance ran after the warm-up.
func measure(t *testing.T, at *aheadTuner, base map[int]time.Duration, fastest int) map[int]int {
	t.Helper()
	ran := map[int]int{}
	for s := 0; s < aheadSteps; s++ {
		if at.source != AheadMeasuring {
			t.Fatalf("step %d: source %q, want %q", s, at.source, AheadMeasuring)
		}
		d := at.next()
		took := base[d]
		if s >= aheadWarmup {
			ran[d]++
			if d == fastest && ran[d] == 1 {
				took *= 10
			}
		}
		at.stepTook(took)
	}
	at.saving.Wait()
	return ran
}

func TestAheadTuner(t *testing.T) {
	t.Setenv(PrefetchEnv, "")
	dir := t.TempDir()
	base := map[int]time.Duration{}
	for i, d := range aheadChoices {
		base[d] = time.Duration(50+i) * time.Millisecond
	}
	fastest := aheadChoices[2]
	base[fastest] = 45 * time.Millisecond
	at, err := newAheadTuner(true, "cpu | set | 1-thread | Q8_0", dir)
	if err != nil {
		t.Fatal(err)
	}
	ran := measure(t, at, base, fastest)
	for _, d := range aheadChoices {
		if ran[d] != aheadRounds {
			t.Errorf("distance %d ran %d times, want %d", d, ran[d], aheadRounds)
		}
	}
	if at.ahead != fastest || at.source != AheadMeasured {
		t.Fatalf("chose %d (%s), want %d (%s)", at.ahead, at.source, fastest, AheadMeasured)
	}
	for range 3 {
		at.stepTook(time.Millisecond) // after the measurement: nothing changes
		if at.next() != fastest {
			t.Fatal("the distance changed after the measurement")
		}
	}

	// The next tuner of the same key starts from the cache; another key
	// measures.
	again, err := newAheadTuner(true, "cpu | set | 1-thread | Q8_0", dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.ahead != fastest || again.source != AheadCached {
		t.Errorf("same key: %d (%s), want %d (%s)", again.ahead, again.source, fastest, AheadCached)
	}
	other, err := newAheadTuner(true, "cpu | set | 2-thread | Q8_0", dir)
	if err != nil {
		t.Fatal(err)
	}
	if other.source != AheadMeasuring || other.ahead != defaultAhead {
		t.Errorf("another key: %d (%s), want %d (%s)", other.ahead, other.source, defaultAhead, AheadMeasuring)
	}

	// Without a cache folder it measures and keeps nothing.
	none, err := newAheadTuner(true, "k", "")
	if err != nil {
		t.Fatal(err)
	}
	measure(t, none, base, fastest)
	if none.ahead != fastest {
		t.Errorf("no cache folder: chose %d, want %d", none.ahead, fastest)
	}
}

func TestAheadPinned(t *testing.T) {
	for _, measure := range []bool{true, false} {
		t.Setenv(PrefetchEnv, "")
		at, err := newAheadTuner(measure, "k", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: AheadMeasuring, false: AheadDefault}[measure]; at.source != want || at.ahead != defaultAhead {
			t.Errorf("measure %v: %d (%s), want %d (%s)", measure, at.ahead, at.source, defaultAhead, want)
		}
		t.Setenv(PrefetchEnv, "3000")
		at, err = newAheadTuner(measure, "k", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for s := range aheadSteps + 1 {
			if d := at.next(); d != 3000 || at.source != AheadEnv {
				t.Fatalf("pinned to 3000: step %d ran %d (%s)", s, d, at.source)
			}
			at.stepTook(time.Duration(s) * time.Millisecond)
		}
	}
	for _, bad := range []string{"-1", "4k", fmt.Sprint(maxAhead + 1)} {
		t.Setenv(PrefetchEnv, bad)
		if _, err := newAheadTuner(true, "k", ""); err == nil || !strings.Contains(err.Error(), PrefetchEnv) {
			t.Errorf("%s=%s: error %v, want one naming the variable", PrefetchEnv, bad, err)
		}
	}
}

func TestAheadCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, aheadFile)
	at := time.Now().Add(-time.Hour)
	for i := range aheadEntries + 5 {
		if err := saveAhead(dir, fmt.Sprint("key", i), aheadEntry{Ahead: aheadChoices[i%len(aheadChoices)], At: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	all := readAhead(dir)
	if len(all) != aheadEntries {
		t.Fatalf("%d entries, want %d", len(all), aheadEntries)
	}
	for i := range 5 {
		if _, ok := all[fmt.Sprint("key", i)]; ok {
			t.Errorf("the oldest entry key%d was kept", i)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the cache file: %v, %v; want mode 0600", fi, err)
	}

	// A distance that is none of the choices is passed over, and so is
	// a measurement older than aheadMaxAge; so is a file that does not
	// decode, which the next save replaces.
	if err := saveAhead(dir, "odd", aheadEntry{Ahead: 1234, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, ok := readAhead(dir)["odd"]; ok {
		t.Error("an entry of distance 1234 was read")
	}
	if err := saveAhead(dir, "old", aheadEntry{Ahead: aheadChoices[0], At: time.Now().Add(-aheadMaxAge - time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := readAhead(dir)["old"]; ok {
		t.Error("an entry older than aheadMaxAge was read")
	}
	if err := os.WriteFile(path, []byte(`{"key1": {"ahead": 20`), 0o600); err != nil {
		t.Fatal(err)
	}
	if all := readAhead(dir); len(all) != 0 {
		t.Errorf("a damaged file gave %d entries", len(all))
	}
	if err := saveAhead(dir, "new", aheadEntry{Ahead: aheadChoices[0], At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if all := readAhead(dir); len(all) != 1 || all["new"].Ahead != aheadChoices[0] {
		t.Errorf("after a damaged file, the save left %v", all)
	}
	// A file that others may write is not trusted (internal/privatefile).
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if all := readAhead(dir); len(all) != 0 {
		t.Errorf("a file others may write gave %d entries", len(all))
	}
}

// TestAheadBackend measures the distance on a quantised model's decode
// steps, where the kernel set prefetches, and saves it for the next
// backend; the float set measures nothing.
func TestAheadBackend(t *testing.T) {
	t.Setenv(PrefetchEnv, "")
	for _, ks := range append(int8Sets(), goKernels) {
		dir := t.TempDir()
		f := load(t, "tiny-mlx-q4", Options{Threads: 1, Kernels: ks.name, TuningCache: dir})
		_, src := f.b.Prefetch()
		if want := map[bool]string{true: AheadMeasuring, false: AheadDefault}[ks.prefetches]; src != want {
			t.Fatalf("%s: source %q before decoding, want %q", ks.name, src, want)
		}
		c := f.cache(t)
		logits := make([]float32, f.m.Config.VocabSize)
		for i := range aheadSteps {
			if err := f.b.Forward(c, []int32{int32(i)}, logits); err != nil {
				t.Fatal(err)
			}
		}
		f.b.Close()
		ahead, src := f.b.Prefetch()
		if !ks.prefetches {
			if src != AheadDefault || ahead != defaultAhead {
				t.Errorf("%s: %d (%s) after decoding, want the default", ks.name, ahead, src)
			}
			continue
		}
		if src != AheadMeasured || !slices.Contains(aheadChoices[:], ahead) {
			t.Fatalf("%s: %d (%s) after %d steps, want a measured choice", ks.name, ahead, src, aheadSteps)
		}
		g := load(t, "tiny-mlx-q4", Options{Threads: 1, Kernels: ks.name, TuningCache: dir})
		if a, s := g.b.Prefetch(); a != ahead || s != AheadCached {
			t.Errorf("%s: the next backend has %d (%s), want %d (%s)", ks.name, a, s, ahead, AheadCached)
		}
	}
}

// TestAheadChangesNothing runs the prefetching kernels at distances from
// none to past the end of the weights: the products are the same bits.
func TestAheadChangesNothing(t *testing.T) {
	defer aheadNow.Store(aheadNow.Load())
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 40, 1024
	xq := make([]int8, cols)
	for i := range xq {
		xq[i] = int8(rng.IntN(255) - 127)
	}
	dx, xsum := randF32(rng, cols/32), randF32(rng, cols/32)
	for c := range dx {
		dx[c] = dx[c&^7] // one step a super-block, for the k-quants
	}
	bs := make([]int16, cols/16)
	sums16(bs, xq)
	f := make([]float32, cols/32+16)
	w := randU32(rng, rows*cols/4)
	sc, bi := halves(rng, rows*cols/64)[0], halves(rng, rows*cols/64)[0]
	for _, ks := range int8Sets() {
		if !ks.prefetches {
			continue
		}
		var first [][]float32
		for i, ahead := range []int{0, aheadChoices[0], defaultAhead, maxAhead} {
			aheadNow.Store(int64(ahead))
			var outs [][]float32
			for _, typ := range i8BlockTypes {
				out := make([]float32, rows)
				ks.gemvBlocksI8[blockI8Type(typ)](out, randBlocks(rand.New(rand.NewPCG(1, 2)), typ, rows, cols, false), xq, dx, xsum, bs)
				outs = append(outs, out)
			}
			for _, gemv := range []func(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum, f []float32, group int){ks.gemvQ4I8, ks.gemvQ8I8} {
				out := make([]float32, rows)
				gemv(out, w, sc, bi, xq, dx, xsum, f, 64)
				outs = append(outs, out)
			}
			if i == 0 {
				first = outs
				continue
			}
			for k := range outs {
				if !slices.Equal(outs[k], first[k]) {
					t.Fatalf("%s: kernel %d differs at %d bytes ahead from no prefetch", ks.name, k, ahead)
				}
			}
		}
	}
}
