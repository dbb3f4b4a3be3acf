package ban

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

// FuzzInit: any argument gives an error or a working controller, never a
// panic.
func FuzzInit(f *testing.F) {
	for _, arg := range []string{`["the","ing"]`, `[]`, `[""]`, `["é"]`} {
		f.Add(arg, uint64(1))
	}
	f.Fuzz(func(t *testing.T, arg string, seed uint64) {
		sdktest.Fuzz(t, func() sdk.Controller { return New() }, arg, seed)
	})
}
