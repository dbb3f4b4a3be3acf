package sessions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
)

// TestSaveKeepsOtherSessionsTempFiles: saving session n leaves alone
// the temporary file of a save of session "n.safetensors.tmp-1" (a valid
// name). Its temporary file used to match n's pattern,
// ".n.safetensors.tmp-*", and the save of n deleted it.
func TestSaveKeepsOtherSessionsTempFiles(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	other, err := store.Path("n.safetensors.tmp-1")
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(store.Dir, strings.Replace(atomicfile.TempPattern(other), "*", "123", 1))
	if err := os.WriteFile(tmp, []byte("a save in flight"), 0o600); err != nil {
		t.Fatal(err)
	}
	meta, kv := sample(4, 1)
	if err := saveAs(store, "n", meta, kv); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("saving n removed %s: %v", filepath.Base(tmp), err)
	}
}
