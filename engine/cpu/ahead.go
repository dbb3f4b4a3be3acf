package cpu

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/privatefile"
	"github.com/driftwoodlabs/driftwood/internal/xdg"
)

// How far ahead of their loads the int8 decode kernels prefetch the
// weights (blocks_i8_amd64.s and internal/vnnigen's gemv kernels) is
// measured, not fixed: the best distance differs between machines and
// between weight types (on an Intel Emerald Rapids VM 16 KiB of Q8_0
// rows was best; on an Intel AMX VM of family 6 model 167 2 KiB of them
// and of Q4_0's, the 1B decode up to 14 % faster than at the old
// constants, while MLX q4's had no clear best, each run choosing between
// 2 and 16 KiB), and no rule from cache sizes or vendor predicted them.
// Prefetching changes no result, only when bytes arrive, so the distance
// is measured on the decode itself: a backend's first decode steps try
// each of aheadChoices in turn, aheadRounds times, and it keeps the one
// whose steps' median time is least. The choice is saved in the tuning
// cache (Options.TuningCache) under the CPU, the kernel set, the worker
// count and the model's weights, so that the next process starts with it
// (docs/RATIONALE.md, "Chosen at run time").

// aheadChoices are the distances tried, in bytes of 4-bit codes; the
// 8-bit kernels prefetch twice as far (the same number of weights).
var aheadChoices = [...]int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10}

// defaultAhead is the distance before a measurement: the one the
// kernels had as a constant, chosen on an Intel Emerald Rapids VM.
const defaultAhead = 8 << 10

// aheadWarmup decode steps pass before the first timed one (the first
// steps of a process fault pages in and warm the caches), and each
// choice is timed aheadRounds times.
const (
	aheadWarmup = 2
	aheadRounds = 5
)

// aheadSteps is how many decode steps a measurement takes.
const aheadSteps = aheadWarmup + aheadRounds*len(aheadChoices)

// aheadNow is the distance the kernels read (gemvAhead): one for the
// process, set by the backend that runs the next step.
var aheadNow atomic.Int64

func init() { aheadNow.Store(defaultAhead) }

// gemvAhead is the distance for the decode kernels' ahead argument.
func gemvAhead() int { return int(aheadNow.Load()) }

// PrefetchEnv pins the distance, in bytes, instead of measuring it.
const PrefetchEnv = "DRIFTWOOD_PREFETCH"

// maxAhead bounds PrefetchEnv.
const maxAhead = 1 << 20

// PinnedPrefetch is the distance PrefetchEnv pins, if it is set, or an
// error naming it where it is not a distance.
func PinnedPrefetch() (ahead int, pinned bool, err error) {
	s := os.Getenv(PrefetchEnv)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxAhead {
		return 0, false, fmt.Errorf("%s=%q: must be a distance in bytes from 0 to %d", PrefetchEnv, s, maxAhead)
	}
	return n, true, nil
}

// Where a backend's prefetch distance came from (Backend.Prefetch).
const (
	AheadDefault   = "default"   // kernels that do not prefetch, or weights that do not go through them
	AheadEnv       = PrefetchEnv // pinned by the environment
	AheadCached    = "cached"    // measured by an earlier process on this CPU
	AheadMeasuring = "measuring" // being measured on the first decode steps
	AheadMeasured  = "measured"  // measured by this backend
)

// DefaultTuningCache is the tuning cache's folder for the command line.
func DefaultTuningCache() string { return xdg.Cache("cpu") }

// aheadTuner holds a backend's distance and measures it.
type aheadTuner struct {
	ahead  int    // the distance of the next step
	source string // where it came from (Ahead*)
	key    string // the measurement's name in the cache
	dir    string // the tuning cache ("": none)
	steps  int    // decode steps seen while measuring
	took   [len(aheadChoices)][aheadRounds]time.Duration
	saving sync.WaitGroup // the measurement being written to the cache
}

// newAheadTuner gives the distance for a backend, key naming what it
// runs: PrefetchEnv's, else the one saved for key in dir, else the
// default while it is measured. Without measure (kernels that do not
// prefetch, weights that do not go through them) it keeps the default.
func newAheadTuner(measure bool, key, dir string) (*aheadTuner, error) {
	t := &aheadTuner{ahead: defaultAhead, source: AheadDefault, key: key, dir: dir}
	if n, pinned, err := PinnedPrefetch(); err != nil {
		return nil, err
	} else if pinned {
		t.ahead, t.source = n, AheadEnv
		return t, nil
	}
	if !measure {
		return t, nil
	}
	if e, ok := readAhead(dir)[key]; ok {
		t.ahead, t.source = e.Ahead, AheadCached
		return t, nil
	}
	t.source = AheadMeasuring
	return t, nil
}

// next is the distance for the next decode step.
func (t *aheadTuner) next() int {
	if t.source == AheadMeasuring && t.steps >= aheadWarmup {
		s := t.steps - aheadWarmup
		// Each round starts one choice later, so that no choice always
		// follows the same one.
		t.ahead = aheadChoices[(s+s/len(aheadChoices))%len(aheadChoices)]
	}
	return t.ahead
}

// stepTook records that the step at next's distance took d, and settles
// the measurement after its last step.
func (t *aheadTuner) stepTook(d time.Duration) {
	if t.source != AheadMeasuring {
		return
	}
	if s := t.steps - aheadWarmup; s >= 0 {
		n := len(aheadChoices)
		t.took[(s+s/n)%n][s/n] = d
	}
	if t.steps++; t.steps < aheadSteps {
		return
	}
	var ms [len(aheadChoices)]float64
	best := 0
	for i := range aheadChoices {
		r := t.took[i]
		slices.Sort(r[:])
		ms[i] = float64(r[aheadRounds/2]) / 1e6
		if ms[i] < ms[best] {
			best = i
		}
	}
	t.ahead, t.source = aheadChoices[best], AheadMeasured
	if t.dir != "" {
		// Off the decode's path (Backend.Close waits for it); a cache
		// that cannot be written is measured again by the next process.
		e := aheadEntry{Ahead: t.ahead, Millis: ms[:], At: time.Now().UTC()}
		t.saving.Add(1)
		go func() {
			defer t.saving.Done()
			saveAhead(t.dir, t.key, e)
		}()
	}
}

// aheadKey names what a distance was measured on: the CPU (its name,
// family, model and stepping), the kernel set, the workers and the
// model's weights (the kind and shape of the first layer's MLP); quant
// says whether those go through the int8 kernels.
func aheadKey(ks *kernelSet, workers int, w *engine.Weights) (key string, quant bool) {
	kind := func(t *engine.Tensor) string {
		switch {
		case t.Quantized():
			return fmt.Sprintf("q%d/g%d", t.Bits, t.GroupSize)
		case t.BlockQuantized():
			return t.Blocks.String()
		}
		return string(t.DType)
	}
	weights := "none"
	if len(w.Layers) > 0 {
		g, d := &w.Layers[0].GateProj, &w.Layers[0].DownProj
		weights = fmt.Sprintf("%s+%s %v", kind(g), kind(d), g.Shape)
		quant = g.Quantized() || g.BlockQuantized()
	}
	return fmt.Sprintf("%s%s | %d-thread | %s", cpuKey(), ks.name, workers, weights), quant
}

// cpuKey starts every key of this CPU.
func cpuKey() string {
	c := cpuid.CPU
	return fmt.Sprintf("%s (family %d model %d stepping %d) | ", c.BrandName, c.Family, c.Model, c.Stepping)
}

// aheadFile is the cache's file in its folder, and aheadLimit bounds
// the file and aheadEntries its entries (the oldest leave first). An
// entry older than aheadMaxAge is measured again: a measurement taken
// while other work held the machine is not kept for ever.
const (
	aheadFile    = "prefetch.json"
	aheadLimit   = 1 << 20
	aheadEntries = 64
	aheadMaxAge  = 30 * 24 * time.Hour
)

// aheadEntry is one measurement in the cache: the distance chosen, each
// choice's median step time, and when.
type aheadEntry struct {
	Ahead  int       `json:"ahead"`
	Millis []float64 `json:"step_ms"`
	At     time.Time `json:"at"`
}

// readAhead returns the cache's measurements in dir, by key: none when
// dir is "", the file is missing, fails the cache's trust rules
// (internal/privatefile) or does not decode, and entries that name a
// distance that is none of aheadChoices, or are older than aheadMaxAge,
// are left out.
func readAhead(dir string) map[string]aheadEntry {
	if dir == "" {
		return nil
	}
	data, err := privatefile.Read(filepath.Join(dir, aheadFile), aheadLimit)
	if err != nil {
		return nil
	}
	var all map[string]aheadEntry
	if json.Unmarshal(data, &all) != nil {
		return nil
	}
	maps.DeleteFunc(all, func(_ string, e aheadEntry) bool {
		return !slices.Contains(aheadChoices[:], e.Ahead) || time.Since(e.At) > aheadMaxAge
	})
	return all
}

// saveAhead adds e under key to the cache in dir, atomically.
func saveAhead(dir, key string, e aheadEntry) error {
	if err := privatefile.Dir(dir); err != nil {
		return err
	}
	all := readAhead(dir)
	if all == nil {
		all = map[string]aheadEntry{}
	}
	all[key] = e
	for len(all) > aheadEntries {
		oldest := ""
		for k, v := range all {
			if oldest == "" || v.At.Before(all[oldest].At) {
				oldest = k
			}
		}
		delete(all, oldest)
	}
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteMode(filepath.Join(dir, aheadFile), 0o600, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// CachedPrefetch lists the distances measured on this CPU that the
// tuning cache in dir holds, one line each (for doctor).
func CachedPrefetch(dir string) []string {
	all := readAhead(dir)
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if what, ok := strings.CutPrefix(k, cpuKey()); ok {
			lines = append(lines, fmt.Sprintf("%s: %d KiB ahead (measured %s)", what, all[k].Ahead>>10, all[k].At.Format("2006-01-02")))
		}
	}
	return lines
}
