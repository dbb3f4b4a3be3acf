// Package shipped builds the shipped controllers into a program. Importing
// it for its side effect,
//
//	import _ "github.com/driftwoodlabs/driftwood/controllers/shipped"
//
// sets controllers.Shipped, so that every controllers.Host offers
// regex, json, choice, ban and maxwords with nothing on disk. The modules
// are built from controllers/examples by `go generate ./controllers/...`
// and committed here compressed; TestEmbeddedMatchSource rebuilds them and
// fails when they differ (README.md).
package shipped

import (
	"embed"

	"github.com/driftwoodlabs/driftwood/controllers"
)

//go:generate go run ./gen

//go:embed *.wasm.gz
var modules embed.FS

func init() { controllers.Shipped = modules }
