package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

func doctor(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := cmdDoctor(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("doctor: %v\n%s%s", err, out.String(), errOut.String())
	}
	return out.String()
}

func TestDoctorWithoutLibrary(t *testing.T) {
	t.Setenv(mlxbridge.EnvVar, "/nonexistent/lib")
	out := doctor(t)
	for _, want := range []string{
		"looked for libmlxc in: /nonexistent/lib",
		"libmlxc not found (looked for /nonexistent/lib",
		"backend: cpu",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorSmokeTest(t *testing.T) {
	if !haveMLX() {
		t.Skipf("libmlxc not found (looked for %s)", strings.Join(mlxbridge.Candidates(""), ", "))
	}
	out := doctor(t, "--model", golden.ModelDir("tiny-mlx-q4"), "--device", "cpu")
	for _, want := range []string{"libmlxc: /", "MLX: 0.", "smoke test: ", "on mlx (cpu)", "max |Δlogit| vs cpu"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
