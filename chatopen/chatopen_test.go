package chatopen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestOpenRefusesATokenizerLargerThanTheModel: a tokenizer with ids past
// the embedding is refused at open, naming both files, instead of at the
// first such token in the backend.
func TestOpenRefusesATokenizerLargerThanTheModel(t *testing.T) {
	src, dir := golden.ModelDir("tiny-f32"), t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer_config.json"} {
		abs, _ := filepath.Abs(filepath.Join(src, name))
		if err := os.Symlink(abs, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatal(err)
	}
	tok["added_tokens"] = append(tok["added_tokens"].([]any), map[string]any{"id": 700, "content": "<|extra|>", "special": true})
	data, _ = json.Marshal(tok)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), dir, Options{Threads: 1, Hub: &hub.Options{Offline: true, CacheDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "tokenizer.json has 701 tokens but the model has 512") || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("Open = %v, want the two files named", err)
	}
}
