package main

import (
	"context"
	"os"
	"testing"
)

// testMainEnv set to 1 makes the test binary driftwood (its arguments a
// driftwood command line).
const testMainEnv = "DRIFTWOOD_TEST_MAIN"

// TestMain keeps the tests' caches (compiled controllers, the prefix
// cache) out of the user's $XDG_CACHE_HOME.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "rank" || os.Getenv(testMainEnv) == "1") {
		// run --ranks starts this binary as its other ranks, and a test
		// starts it as driftwood itself.
		os.Exit(realMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "driftwood-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
