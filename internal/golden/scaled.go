package golden

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// ScaledCopy copies the f32 test model name into a new temporary folder
// with every *_proj.weight scaled by factor in place: the same files,
// the same safetensors header byte for byte, other weights, as a
// fine-tune of the same shape is. It returns the folder.
func ScaledCopy(t testing.TB, name string, factor float32) string {
	t.Helper()
	src, dir := ModelDir(name), filepath.Join(t.TempDir(), name+"-scaled")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "model.safetensors" {
			scaleProjections(t, data, factor)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// scaleProjections scales the *_proj.weight tensors of the safetensors
// file in data, in place.
func scaleProjections(t testing.TB, data []byte, factor float32) {
	t.Helper()
	_, tensors, err := safetensors.ParseHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	scaled := 0
	for name, tt := range tensors {
		if !strings.HasSuffix(name, "_proj.weight") {
			continue
		}
		if tt.DType != safetensors.F32 {
			t.Fatalf("%s is %s: ScaledCopy scales f32 models", name, tt.DType)
		}
		for i := 0; i < len(tt.Data); i += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(tt.Data[i:]))
			binary.LittleEndian.PutUint32(tt.Data[i:], math.Float32bits(v*factor))
		}
		scaled++
	}
	if scaled == 0 {
		t.Fatal("no *_proj.weight tensor to scale")
	}
}
