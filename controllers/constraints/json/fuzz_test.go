package json

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

// FuzzInit: any argument (a schema typed by a user) gives an error or a
// working controller, never a panic.
func FuzzInit(f *testing.F) {
	for _, s := range schemas {
		f.Add(s.schema, uint64(1))
	}
	f.Add(`{"type":"string","maxLength":-3}`, uint64(2))
	f.Add(`{"properties":{"a":{"enum":[]}},"required":["a","b"]}`, uint64(3))
	f.Add(`{"oneOf":[{"type":"object","properties":{"k":{"const":1},"v":{"$ref":"#"}}},{"type":"object","properties":{"k":{"const":2}}},{"enum":[1,"a"]}]}`, uint64(4))
	f.Add(`{"$defs":{"p":{"required":[]}},"properties":{"a":{"anyOf":[{"$ref":"#","maxLength":4}]}},"required":["a","b"]}`, uint64(6))
	f.Add(`{"allOf":[{"type":["string","integer"],"maxLength":3},{"anyOf":[{"type":"integer"},{"minLength":2}]}]}`, uint64(5))
	f.Add(`{"type":"object","properties":{"z":{"pattern":"^[0-9]{2}(-x)?$","maxLength":3},"d":{"format":"date-time"}}}`, uint64(7))
	f.Fuzz(func(t *testing.T, arg string, seed uint64) {
		sdktest.Fuzz(t, func() sdk.Controller { return New() }, arg, seed)
	})
}
