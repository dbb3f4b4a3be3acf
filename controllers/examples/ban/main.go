// Command ban is the ban controller as a WebAssembly module: the reply never
// contains the words of the argument, a JSON array of strings.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o ban.wasm ./controllers/examples/ban
package main

import (
	"github.com/driftwoodlabs/driftwood/controllers/constraints/ban"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

func init() { sdk.Register(func() sdk.Controller { return ban.New() }) }

func main() {}
