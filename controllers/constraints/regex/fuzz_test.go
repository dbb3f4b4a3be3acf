package regex

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

// FuzzInit: any expression gives an error or a working controller, never
// a panic.
func FuzzInit(f *testing.F) {
	for _, p := range patterns {
		f.Add(p.expr, uint64(1))
	}
	f.Add(`(?i)\b(a|é)+$`, uint64(2))
	f.Fuzz(func(t *testing.T, expr string, seed uint64) {
		sdktest.Fuzz(t, func() sdk.Controller { return New() }, expr, seed)
	})
}
