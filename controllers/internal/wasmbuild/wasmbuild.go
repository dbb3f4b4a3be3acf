// Package wasmbuild builds Go controllers to WebAssembly with the Go
// toolchain. It is the one recipe behind both `driftwood controllers
// build` and the generator of controllers/shipped, and it has no
// dependency on the Wasm runtime, so the generator builds in a moment.
package wasmbuild

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Go builds the main package in dir to the Wasm module out:
//
//	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -buildmode=c-shared -trimpath -buildvcs=false -o out
//
// -trimpath and -buildvcs=false keep the folder the source sits in and the
// repository's commit out of the module. With a toolchain (e.g.
// "go1.26.8") the build is reproducible: that exact Go toolchain
// (GOTOOLCHAIN), and none of the settings that change the output from the
// environment or the go env file (GOENV=off; GOFLAGS, GOWASM and
// GOEXPERIMENT empty). With "" the go command found on PATH builds with
// the user's settings.
//
// # Errors
//
// The go command's own output, naming dir, when the build fails.
func Go(dir, out, toolchain string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-o", abs, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if toolchain != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+toolchain, "GOENV=off", "GOFLAGS=", "GOWASM=", "GOEXPERIMENT=")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", dir, err, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Toolchain returns the toolchain that go.mod's toolchain line pins (e.g.
// "go1.26.8"), for the go.mod of the module that holds dir.
//
// # Errors
//
// No go.mod above dir, or one without a toolchain line.
func Toolchain(dir string) (string, error) {
	mod, err := findGoMod(dir)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(mod)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "toolchain" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s has no toolchain line: the shipped controllers are built by the toolchain it names", mod)
}

func findGoMod(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "go.mod")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above " + dir)
		}
		dir = parent
	}
}
