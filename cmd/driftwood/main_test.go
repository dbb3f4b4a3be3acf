package main

import (
	"os"
	"testing"
)

// TestMain keeps the tests' caches (compiled controllers, the prefix
// cache) out of the user's $XDG_CACHE_HOME.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "driftwood-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
