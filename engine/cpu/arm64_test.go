//go:build !arm64

package cpu

import (
	"os"
	"os/exec"
	"testing"
)

// TestARM64 runs the engine's tests built for arm64 under
// qemu-aarch64-static: the portable kernels and the NEON sets must pass
// the same golden checks (logits, greedy continuations, KV cache against
// recompute) and exact kernel tests as on amd64. QEMU_CPU=max emulates
// SDOT, and DRIFTWOOD_KERNELS=neondot makes every backend the tests open
// fail if that set is missing. .ci/run installs qemu-user-static so that
// CI runs it.
func TestARM64(t *testing.T) {
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Skip("qemu-aarch64-static is not installed (.ci/run installs it): the arm64 build was not tested")
	}
	if testing.Short() {
		t.Skip("-short: the arm64 build was not tested")
	}
	// -short: not the real model, whose 1,280 steps take hours emulated.
	// The emulated binaries run on one thread (GOMAXPROCS=1, which also
	// stops the pool's workers polling): on a CI machine whose two cores
	// run the other packages' tests, emulated threads that poll starved
	// the ones with work, and the suite ran past the 10-minute limit
	// where it takes 30-40 s alone.
	// The inner -timeout fires before this package's own 10 minutes, so
	// that a hang shows the emulated test that hung.
	cmd := exec.Command("go", "test", "-short", "-timeout", "7m", "-exec", "env GOMAXPROCS=1 "+qemu, ".", "../../engine", "../../engine/safetensors")
	cmd.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0", "QEMU_CPU=max", "DRIFTWOOD_KERNELS=neondot")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("arm64 tests under %s: %v\n%s", qemu, err, out)
	}
	t.Logf("arm64 under %s:\n%s", qemu, out)
}
