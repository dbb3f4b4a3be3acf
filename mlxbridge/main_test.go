package mlxbridge

import (
	"fmt"
	"os"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
)

// TestMain self-checks a real libmlxc that is newer than every mlx-c
// release Driftwood knows once, as New does for the product, and then
// trusts it for the tests that load models without a reference; a
// library that fails the check fails the run. (The refusal tests clear
// the trust for themselves.)
func TestMain(m *testing.M) {
	if os.Getenv(TrustEnvVar) == "" {
		if lib, err := open(""); err == nil && lib.Release.Newer {
			_, err := SelfCheck(Options{lib: lib, Device: "cpu"}, func(m *engine.Model) (engine.Backend, error) {
				return cpu.New(m, cpu.Options{Threads: 1, KVType: engine.KVF32, Kernels: "float"})
			})
			if err != nil {
				fmt.Fprintf(os.Stderr, "mlxbridge tests: %s fails the self-check: %v\n", lib.Path, err)
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "mlxbridge tests: %s is newer than every known mlx-c release (%s); it passed the self-check, so the tests trust it\n", lib.Path, lib.Release.Why)
			os.Setenv(TrustEnvVar, "1")
		}
	}
	os.Exit(m.Run())
}
