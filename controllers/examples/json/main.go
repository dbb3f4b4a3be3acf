// Command json is the JSON controller as a WebAssembly module: the reply is one
// JSON value, valid against the argument, a JSON schema (empty: any value).
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o json.wasm ./controllers/examples/json
package main

import (
	"github.com/driftwoodlabs/driftwood/controllers/constraints/json"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

func init() { sdk.Register(func() sdk.Controller { return json.New() }) }

func main() {}
