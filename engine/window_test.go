package engine

import (
	"strings"
	"testing"
)

func TestCheckWindow(t *testing.T) {
	c := &Config{NumHiddenLayers: 16, NumKeyValueHeads: 8, HeadDim: 64, MaxPositionEmbeddings: 1 << 24} // 64 KiB per position
	for _, tc := range []struct {
		window int
		memory uint64
		want   string
		reason string
	}{
		{8192, 8 << 30, "", "half a GiB of cache fits in 8 GiB"},
		{1 << 17, 8 << 30, "", "a cache exactly the size of the memory is allowed"},
		{1<<17 + 1, 8 << 30, "its KV cache would take 8.0 GiB (64.0 KiB per position), more than this machine's 8.0 GiB", "a cache that could never fit is refused"},
		{1 << 24, 0, "", "with the memory unknown only the model's limit applies"},
		{1<<24 + 1, 0, "must be in [1, 16777216]", "the model's limit"},
		{0, 8 << 30, "must be in [1,", "an empty window"},
		{-5, 8 << 30, "context window -5", "a negative window"},
	} {
		err := c.checkWindow(tc.window, tc.memory)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: checkWindow(%d) = %v, want %q", tc.reason, tc.window, err, tc.want)
		}
	}
}

func TestWindow(t *testing.T) {
	c := &Config{MaxPositionEmbeddings: 512}
	for req, want := range map[int]int{0: 512, 100: 100, 512: 512, 4096: 512} {
		if got := c.Window(req); got != want {
			t.Errorf("Window(%d) = %d, want %d", req, got, want)
		}
	}
}
