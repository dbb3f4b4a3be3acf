package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

// defaultDoctorModel is the smoke test's model when --model is not given
// and the folder exists (it does in a clone of the repository).
const defaultDoctorModel = "testdata/models/tiny-f32"

// cmdDoctor reports which libmlxc was found (or where it was looked for),
// MLX's version and device, and runs a one-token smoke test on MLX,
// checked against the CPU backend.
func cmdDoctor(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("driftwood doctor", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood doctor [flags]")
		fs.PrintDefaults()
	}
	model := fs.String("model", "", "model folder for the smoke test (default "+defaultDoctorModel+" when it exists)")
	mlxLib := fs.String("mlx-lib", "", "libmlxc's path (default: $"+mlxbridge.EnvVar+", then the usual places)")
	device := fs.String("device", "", "MLX device: gpu, cpu, or the GPU when there is one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(out, "cpu kernels: %s\n", cpuKernelsLine())
	fmt.Fprintf(out, "cpu tuning: %s\n", cpu.DetectTuning())
	if n, err := cpu.DefaultBatch(); err == nil { // an error is the kernels line's
		fmt.Fprintf(out, "cpu prompt batch: %d tokens through the model at once (the kernel set's)\n", n)
	}
	fmt.Fprintf(out, "cpu prefetch: %s\n", prefetchLine())
	if f := cpu.DefaultQ4Form(); f != "" {
		fmt.Fprintf(out, "cpu Q4_0 and Q4_1 decode kernels: %s\n", f)
	}
	fmt.Fprintf(out, "looked for libmlxc in: %s\n", strings.Join(mlxbridge.Candidates(*mlxLib), ", "))
	lib, err := mlxbridge.Load(*mlxLib)
	if err != nil {
		fmt.Fprintf(out, "libmlxc: %v\n", err)
		fmt.Fprintln(out, "backend: cpu (--backend auto falls back to it; --backend mlx fails)")
		return nil
	}
	fmt.Fprintf(out, "libmlxc: %s\nMLX: %s (mlx-c %s, recognised by its functions)\n", lib.Path, lib.MLX, lib.CAPI)
	if lib.Newer {
		fmt.Fprintf(out, "mlx-c: newer than any release this Driftwood knows: %s\n", lib.Why)
	}
	if lib.GPU {
		fmt.Fprintf(out, "GPU: %s\n", lib.Device)
	} else {
		fmt.Fprintln(out, "GPU: no (this MLX runs on the CPU only)")
	}
	r, err := mlxbridge.SelfCheck(mlxbridge.Options{Library: *mlxLib, Device: *device}, backends.FloatCPU)
	switch {
	case err != nil:
		fmt.Fprintf(out, "self-check: FAILED: %v\n", err)
	case lib.Newer:
		fmt.Fprintf(out, "self-check: %s (run does this check at load, since this mlx-c is newer than any Driftwood knows; %s=1 skips it)\n", r, mlxbridge.TrustEnvVar)
	default:
		fmt.Fprintf(out, "self-check: %s (run skips it: this mlx-c release is known)\n", r)
	}
	if err != nil && lib.Newer && os.Getenv(mlxbridge.TrustEnvVar) != "1" {
		fmt.Fprintln(out, "backend: cpu (--backend auto falls back to it; --backend mlx fails)")
		return nil
	}
	fmt.Fprintf(out, "sampling: %s\n", samplingLine(*mlxLib, *device, lib.GPU && *device != "cpu"))
	dir := *model
	if dir == "" {
		if _, err := os.Stat(filepath.Join(defaultDoctorModel, "config.json")); err != nil {
			fmt.Fprintln(out, "smoke test: skipped (give --model DIR)")
			return nil
		}
		dir = defaultDoctorModel
	}
	return smokeTest(out, dir, *mlxLib, *device)
}

// samplingLine says where tokens are sampled on MLX and how a
// controller's mask gets there (mlxbridge.MaskChain).
func samplingLine(mlxLib, device string, gpu bool) string {
	zero, err := mlxbridge.MaskChain(mlxbridge.Options{Library: mlxLib, Device: device})
	chain := "this MLX copies wrapped memory (only Metal maps it in place)"
	if zero {
		chain = "this MLX maps wrapped memory in place: a controller's mask reaches the device without a copy"
	}
	switch {
	case err != nil:
		return err.Error()
	case gpu:
		return "on the GPU, where the logits stay; " + chain
	}
	return "on the host (on MLX's CPU device the host's sampler is the faster); " + chain
}

// smokeTest runs one token through the model on MLX and on the CPU
// backend and compares the logits.
func smokeTest(out io.Writer, dir, mlxLib, device string) error {
	m, err := engine.LoadModel(dir)
	if err != nil {
		return err
	}
	defer m.Close()
	token := int32(0)
	if b := m.Config.BOSTokenID; b != nil {
		token = *b
	}
	start := time.Now()
	mb, err := mlxbridge.New(m, mlxbridge.Options{Library: mlxLib, Device: device, Reference: backends.FloatCPU})
	if err != nil {
		return fmt.Errorf("smoke test: %w", err)
	}
	defer mb.Close()
	load := time.Since(start)
	got, took, err := oneToken(mb, m.Config, token)
	if err != nil {
		return fmt.Errorf("smoke test: %w", err)
	}
	// MLX multiplies in float: compare with the CPU's float kernels.
	cb, err := backends.FloatCPU(m)
	if err != nil {
		return err
	}
	defer cb.Close()
	want, _, err := oneToken(cb, m.Config, token)
	if err != nil {
		return err
	}
	var diff float64
	for i := range got {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
	}
	fmt.Fprintf(out, "smoke test: %s on mlx (%s): loaded in %s, token %d → next %d in %s; max |Δlogit| vs cpu %.2g\n",
		dir, mb.Device(), load.Round(time.Millisecond), token, engine.Argmax(got), took.Round(time.Microsecond), diff)
	if diff > 1e-2 || engine.Argmax(got) != engine.Argmax(want) {
		return errors.New("smoke test: MLX's logits disagree with the CPU backend's")
	}
	return nil
}

// cpuKernelsLine says which kernel set the CPU backend uses and how to
// choose another.
func cpuKernelsLine() string {
	k, int8, err := cpu.DefaultKernels()
	if err != nil {
		return err.Error()
	}
	if !int8 {
		return k
	}
	act, err := cpu.DefaultActivations()
	if err != nil {
		return err.Error()
	}
	if act == cpu.ActivationsInt8x2 {
		return k + " (int8 activations for quantised weights, twice: the second pass takes their rounding error; DRIFTWOOD_KERNELS=float for the float reference)"
	}
	return k + " (int8 activations for quantised weights; DRIFTWOOD_ACTIVATIONS=int8x2 adds a pass over their rounding error, DRIFTWOOD_KERNELS=float is the float reference)"
}

func oneToken(b engine.Backend, c *engine.Config, token int32) ([]float32, time.Duration, error) {
	window := 16
	if m := c.MaxPositionEmbeddings; m > 0 && m < window {
		window = m
	}
	cache, err := b.NewCache(window)
	if err != nil {
		return nil, 0, err
	}
	defer cache.Close()
	logits := make([]float32, c.VocabSize)
	start := time.Now()
	err = b.Forward(cache, []int32{token}, logits)
	return logits, time.Since(start), err
}

// prefetchLine says how far ahead the int8 decode kernels prefetch: the
// distance pinned by the environment, or those measured on this CPU and
// kept in the tuning cache.
func prefetchLine() string {
	if n, pinned, err := cpu.PinnedPrefetch(); err != nil {
		return err.Error() + " (a backend refuses to start)"
	} else if pinned {
		return fmt.Sprintf("%d bytes ahead (%s)", n, cpu.PrefetchEnv)
	}
	measured := cpu.CachedPrefetch(cpu.DefaultTuningCache())
	if len(measured) == 0 {
		return "measured on a quantised model's first decode steps; none measured on this CPU yet"
	}
	return "measured on a quantised model's first decode steps:\n  " + strings.Join(measured, "\n  ")
}
