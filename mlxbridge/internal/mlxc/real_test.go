package mlxc

import (
	"errors"
	"strings"
	"testing"
)

// TestRealLibrary runs the checks that need libmlxc (found as `driftwood
// doctor` finds it): the version, an MLX error arriving as a Go error
// instead of exiting the process, and a computation read back in place.
func TestRealLibrary(t *testing.T) {
	path, err := Search{}.Find()
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	lib, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Open(path); again != lib {
		t.Error("a second Open of the same file loaded it again")
	}
	if !strings.HasPrefix(lib.Version, "0.") {
		t.Errorf("MLX version %q", lib.Version)
	}
	err = lib.Do(func(t *Thread) error {
		s := t.DefaultStream(CPU)
		defer t.FreeStream(s)
		t.Use(s)
		t.Eval(t.Matmul(t.Zeros([]int{1, 4}, Float32), t.Zeros([]int{3, 4}, Float32)))
		return nil
	})
	var e *Error
	if !errors.As(err, &e) || e.Func != "mlx_matmul" || !strings.Contains(e.Msg, "matmul") {
		t.Fatalf("a shape mismatch gave %v, want mlx_matmul's *Error with MLX's message", err)
	}
	t.Logf("MLX %s at %s; a shape mismatch: %v", lib.Version, path, err)
	var got []float32
	err = lib.Do(func(t *Thread) error {
		s := t.DefaultStream(CPU)
		defer t.FreeStream(s)
		t.Use(s)
		x := t.FromBytes([]byte{0, 0, 128, 63, 0, 0, 0, 64}, []int{1, 2}, Float32)  // [1 2]
		w := t.FromBytes([]byte{0, 0, 64, 64, 0, 0, 128, 64}, []int{2, 1}, Float32) // [3; 4]
		got = append(got, t.Float32s(t.Add(t.Matmul(x, w), x))...)
		return nil
	})
	if err != nil || len(got) != 2 || got[0] != 12 || got[1] != 13 {
		t.Errorf("[1 2]·[3; 4] + [1 2] = %v, %v; want [12 13]", got, err)
	}
}
