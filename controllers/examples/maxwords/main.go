// Command maxwords is the maxwords controller as a WebAssembly module: the reply
// ends after the argument's number of words.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o maxwords.wasm ./controllers/examples/maxwords
package main

import (
	"github.com/driftwoodlabs/driftwood/controllers/constraints/maxwords"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

func init() { sdk.Register(func() sdk.Controller { return maxwords.New() }) }

func main() {}
