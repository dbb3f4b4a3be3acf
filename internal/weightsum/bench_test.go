//go:build linux

// The benchmarks drop a file's pages from the page cache with
// posix_fadvise, which only Linux has.

package weightsum

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sort"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// fileEnv names a safetensors file for the benchmarks, e.g. the 695 MB
// model.safetensors of `driftwood dev gen-model --dtype q4`.
const fileEnv = "DRIFTWOOD_WEIGHTSUM_FILE"

// BenchmarkFile compares, on the file $DRIFTWOOD_WEIGHTSUM_FILE, the
// sampled fingerprint (with and without asking for the blocks first, at
// several blocks a tensor) with a SHA-256 of the whole file, each with
// the file's pages in the page cache (warm) and dropped from it before
// each run (cold, posix_fadvise DONTNEED).
func BenchmarkFile(b *testing.B) {
	path := os.Getenv(fileEnv)
	if path == "" {
		b.Skip("set " + fileEnv + " to a safetensors file")
	}
	for _, cold := range []bool{false, true} {
		temp := map[bool]string{false: "warm", true: "cold"}[cold]
		for _, n := range []int{4, 16} {
			for _, advise := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/sample-%d-advise-%v", temp, n, advise), func(b *testing.B) {
					for b.Loop() {
						data, tensors, done := mapFile(b, path, cold)
						h := sha256.New()
						sample(h, tensors, n, advise)
						h.Sum(nil)
						b.SetBytes(int64(len(data)))
						done()
					}
				})
			}
		}
		b.Run(temp+"/full-sha256", func(b *testing.B) {
			for b.Loop() {
				data, _, done := mapFile(b, path, cold)
				f, _ := os.Open(path)
				h := sha256.New()
				io.Copy(h, f)
				f.Close()
				h.Sum(nil)
				b.SetBytes(int64(len(data)))
				done()
			}
		})
	}
}

// mapFile maps path (its pages dropped from the page cache first when
// cold) and returns its tensors' bytes in name order.
func mapFile(b *testing.B, path string, cold bool) ([]byte, [][]byte, func()) {
	b.StopTimer()
	defer b.StartTimer()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if cold {
		unix.Fdatasync(int(f.Fd()))
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			b.Fatal(err)
		}
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	_, ts, err := safetensors.ParseHeader(data)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	sort.Strings(names)
	tensors := make([][]byte, len(names))
	for i, n := range names {
		tensors[i] = ts[n].Data
	}
	return data, tensors, func() { b.StopTimer(); unix.Munmap(data); b.StartTimer() }
}
