// Command gen builds the shipped controllers from their source in
// controllers/examples and writes them, gzip-compressed, to
// controllers/shipped. `go generate ./controllers/...` runs it there.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/driftwoodlabs/driftwood/controllers/internal/wasmbuild"
)

func main() {
	src := flag.String("src", "../examples", "the controllers' source: one folder with a main package each")
	out := flag.String("o", ".", "where NAME.wasm.gz are written")
	flag.Parse()
	start := time.Now()
	names, err := wasmbuild.Shipped(*src, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("gen: built %v into %s in %.1fs\n", names, *out, time.Since(start).Seconds())
}
