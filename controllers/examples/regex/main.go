// Command regex is the regex controller as a WebAssembly module: the reply must
// match the argument, a Go regular expression, as a whole.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o regex.wasm ./controllers/examples/regex
package main

import (
	"github.com/driftwoodlabs/driftwood/controllers/constraints/regex"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

func init() { sdk.Register(func() sdk.Controller { return regex.New() }) }

func main() {}
