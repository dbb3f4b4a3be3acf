// Command wasmexec runs a GOOS=wasip1 test binary under wasmtime, so that
// guest-side code (the controller SDK, the constraints) can be tested and
// benchmarked as Wasm, the way controllers run:
//
//	go build -o /tmp/wasmexec ./bench/wasmexec
//	GOOS=wasip1 GOARCH=wasm go test -exec /tmp/wasmexec -run '^$' -bench NewState ./controllers/constraints/regex
//
// The binary sees the file system read-only (tests read testdata), its
// arguments and environment, and stdout/stderr. The driftwood imports of
// the SDK answer -1 (nothing runs them outside a host).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmexec BINARY.wasm [ARGS...]")
		os.Exit(2)
	}
	code, err := run(os.Args[1], os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmexec:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// run runs the command module at path with args and returns its exit code.
func run(path string, args []string) (int, error) {
	engine := wasmtime.NewEngine()
	mod, err := wasmtime.NewModuleFromFile(engine, path)
	if err != nil {
		return 0, err
	}
	linker := wasmtime.NewLinker(engine)
	if err := linker.DefineWasi(); err != nil {
		return 0, err
	}
	for _, imp := range mod.Imports() {
		if imp.Module() != "driftwood" || imp.Type().FuncType() == nil {
			continue
		}
		results := len(imp.Type().FuncType().Results())
		err := linker.FuncNew(imp.Module(), *imp.Name(), imp.Type().FuncType(), func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			out := make([]wasmtime.Val, results)
			for i := range out {
				out[i] = wasmtime.ValI32(-1)
			}
			return out, nil
		})
		if err != nil {
			return 0, err
		}
	}
	wasi := wasmtime.NewWasiConfig()
	wasi.InheritStdout()
	wasi.InheritStderr()
	wasi.SetArgv(args)
	wasi.InheritEnv()
	if err := wasi.PreopenDir("/", "/", wasmtime.DIR_READ, wasmtime.FILE_READ); err != nil {
		return 0, err
	}
	store := wasmtime.NewStore(engine)
	store.SetWasi(wasi)
	inst, err := linker.Instantiate(store, mod)
	if err != nil {
		return 0, err
	}
	start := inst.GetFunc(store, "_start")
	if start == nil {
		return 0, errors.New(path + " is not a command module (no _start)")
	}
	if _, err := start.Call(store); err != nil {
		var werr *wasmtime.Error
		if errors.As(err, &werr) {
			if status, ok := werr.ExitStatus(); ok {
				return int(status), nil
			}
		}
		return 0, err
	}
	return 0, nil
}
