package sessions

import "testing"

func TestModelSourceName(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		src        ModelSource
		name, show string
		reason     string
	}{
		{ModelSource{Path: "/m/tiny"}, "/m/tiny", "/m/tiny", "a folder of the user's: its path"},
		{ModelSource{Repo: "org/m", Revision: commit, Path: "/c/snap"}, "org/m@" + commit, "org/m", "a cached repo: pinned to its commit"},
		{ModelSource{Repo: "org/m-GGUF", Revision: commit, File: "m-Q4_K_M.gguf", Path: "/c/snap/m-Q4_K_M.gguf"}, "org/m-GGUF@" + commit + ":m-Q4_K_M.gguf", "org/m-GGUF:m-Q4_K_M.gguf", "one GGUF file of a cached repo"},
		{ModelSource{Store: "ollama:llama3.2:1b", Path: "/o/blobs/sha256-ab"}, "ollama:llama3.2:1b", "ollama:llama3.2:1b", "a store's model: its name, not the blob"},
	} {
		if got := c.src.Name(); got != c.name {
			t.Errorf("%s: Name %q, want %q", c.reason, got, c.name)
		}
		if got := c.src.String(); got != c.show {
			t.Errorf("%s: String %q, want %q", c.reason, got, c.show)
		}
	}
}
