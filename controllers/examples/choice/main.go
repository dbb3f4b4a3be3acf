// Command choice is the choice controller as a WebAssembly module: the reply is
// exactly one of the strings of the argument, a JSON array.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o choice.wasm ./controllers/examples/choice
package main

import (
	"github.com/driftwoodlabs/driftwood/controllers/constraints/choice"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

func init() { sdk.Register(func() sdk.Controller { return choice.New() }) }

func main() {}
