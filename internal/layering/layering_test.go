package layering

import (
	"bytes"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/driftwoodlabs/driftwood"

// ranks puts each package of the app (by its path in the module) on a
// layer: a package may import only packages on lower layers, so nothing
// imports upward and packages on one layer (two backends, conversation
// and the controller host) never import each other. Every package of the
// module is ranked, the guest's side (the controller SDK, the
// constraints and the example controllers) and the tools too.
var ranks = map[string]int{
	"cmd/driftwood": 8,
	"bench/ggufgen": 8,
	// It runs a GOOS=wasip1 test binary under wasmtime.
	"bench/wasmexec": 8,
	// go generate's builder of the shipped controllers.
	"controllers/shipped/gen": 8,

	"tui": 7,

	"chatopen": 6,
	"config":   6,
	// A chat's life as a session: above the conversation, beside the
	// recipe that opens its model.
	"chatsession": 6,
	// The shipped modules register themselves with the host.
	"controllers/shipped": 6,

	// The conversation knows its controllers through an interface, so
	// the host (and wasmtime) stays out of it.
	"conversation":        5,
	"controllers":         5,
	"backends":            5,
	"internal/golden":     5,
	"internal/synthmodel": 5,
	// The example controllers: main packages of the guest's side, each
	// a constraint behind the SDK's glue.
	"controllers/examples/ban":      5,
	"controllers/examples/choice":   5,
	"controllers/examples/json":     5,
	"controllers/examples/maxwords": 5,
	"controllers/examples/regex":    5,

	// The backends implement engine.Backend; sessions and the hub know
	// the engine's types.
	"engine/cpu": 4,
	"mlxbridge":  4,
	"sessions":   4,
	"hub":        4,
	// The GGUF→MLX converter writes a folder from the engine's model.
	"internal/ggufconv": 4,
	// The constraints that build on the regex constraint's automata.
	"controllers/constraints/choice": 4,
	"controllers/constraints/json":   4,

	"engine":      3,
	"engine/chat": 3,
	// The constraints, on the SDK alone; the SDK's test helpers read a
	// tokenizer for real vocabularies.
	"controllers/constraints/ban":      3,
	"controllers/constraints/maxwords": 3,
	"controllers/constraints/regex":    3,
	"controllers/sdk/sdktest":          3,

	"engine/tokenizer":   2,
	"engine/safetensors": 2,
	// MLX's affine form of GGUF's blocks, for the converter and the MLX
	// backend.
	"internal/ggufaffine": 2,
	// The guest SDK speaks the wire format (controllers/abi).
	"controllers/sdk": 2,

	// The tokenizer reads a GGUF file's vocabulary with it.
	"engine/gguf": 1,

	"controllers/abi":                1,
	"controllers/internal/wasmbuild": 1,
	"engine/cpu/internal/vnnigen":    1,
	"internal/atomicfile":            1,
	"internal/cachedir":              1,
	"internal/privatefile":           1,
	"internal/sysmem":                1,
	"internal/weightsum":             1,
	"internal/xdg":                   1,
	"mlxbridge/internal/mlxc":        1,
	// It reads mlx-c's headers and writes mlxc's release table.
	"mlxbridge/internal/mlxc/internal/sigtab": 1,

	// Writers hold their temporary files with it, cleaners test them.
	"internal/flock": 0,
	// Every reader of a file a user names bounds its reads with it.
	"internal/limitedfile": 0,
	// The weights readers map their files with it.
	"internal/mapfile": 0,
	// Weights readers and KV caches convert 16-bit floats with it.
	"internal/half": 0,
	// What a conversation records of its controllers: the host makes the
	// records, sessions save them, the conversation carries them.
	"internal/controlrecord": 0,
	// This test.
	"internal/layering": 0,
}

// allowed are edges that break the layers for now, each with the reason.
var allowed = map[[2]string]string{}

// list runs go list over the module's packages with a template.
func list(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: no go command on PATH")
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(gobin, append([]string{"list"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// TestImportsPointDown checks every import (not test imports) between
// the module's packages against the layers, and that each package of
// the module is ranked.
func TestImportsPointDown(t *testing.T) {
	out := list(t, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...")
	used := map[[2]string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		from, ok := strings.CutPrefix(fields[0], module+"/")
		if !ok {
			continue
		}
		rf, ranked := ranks[from]
		if !ranked {
			t.Errorf("%s has no layer: add it to ranks", from)
			continue
		}
		for _, imp := range fields[1:] {
			to, ok := strings.CutPrefix(imp, module+"/")
			rt, ranked := ranks[to]
			if !ok || !ranked || rt < rf {
				continue
			}
			if _, ok := allowed[[2]string{from, to}]; ok {
				used[[2]string{from, to}] = true
				continue
			}
			t.Errorf("%s (layer %d) imports %s (layer %d): imports point down, to lower layers only", from, rf, to, rt)
		}
	}
	for edge, why := range allowed {
		if !used[edge] {
			t.Errorf("%s no longer imports %s (%s): remove the edge from allowed", edge[0], edge[1], why)
		}
	}
}

// TestDependencies checks what whole dependency trees must leave out:
// the conversation runs without the Wasm runtime, and the engine without
// anything of the terminal interface or the Wasm runtime.
func TestDependencies(t *testing.T) {
	for _, tc := range []struct {
		pkg, reason string
		banned      []string
	}{
		{"conversation", "it knows its controllers through an interface", []string{"github.com/bytecodealliance/wasmtime-go", module + "/controllers", module + "/tui", module + "/chatopen"}},
		{"chatopen", "opening a chat needs no controller host or interface", []string{"github.com/bytecodealliance/wasmtime-go", "charm.land/", module + "/tui"}},
		{"engine", "the engine knows no one above it", []string{"github.com/bytecodealliance/wasmtime-go", "charm.land/", module + "/sessions", module + "/hub"}},
		{"controllers", "the host shares only the wire format (controllers/abi) with its guests, and keeps its records in internal/controlrecord, below sessions", []string{module + "/controllers/sdk", module + "/controllers/constraints", module + "/sessions"}},
	} {
		deps := strings.Fields(list(t, "-deps", "-f", "{{.ImportPath}}", module+"/"+tc.pkg))
		var bad []string
		for _, d := range deps {
			for _, b := range tc.banned {
				if strings.HasPrefix(d, b) {
					bad = append(bad, d)
				}
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s depends on %s; it must not: %s", tc.pkg, strings.Join(bad, ", "), tc.reason)
		}
	}
}
