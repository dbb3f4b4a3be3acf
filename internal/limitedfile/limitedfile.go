// Package limitedfile reads small files whole with a bound on their size,
// so that a path pointed at /dev/zero, a FIFO or a multi-gigabyte file
// gets one clear error instead of filling the memory or hanging.
package limitedfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Limits for the kinds of file Driftwood reads whole. They are generous:
// the real Llama 3 tokenizer.json is 9 MB.
const (
	Config          = 1 << 20   // config.json, generation_config.json, config.toml
	Index           = 16 << 20  // model.safetensors.index.json (Llama 405B's is 0.2 MB)
	Short           = 64 << 10  // a hub ref or token file: one line
	Tokenizer       = 64 << 20  // tokenizer.json
	TokenizerConfig = 16 << 20  // tokenizer_config.json (it holds the chat template)
	Template        = 1 << 20   // a chat template file (.jinja)
	Controller      = 256 << 20 // a controller module (.wasm, .wat)
)

// TooLargeError says that a file is over its limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s, the most Driftwood reads for this kind of file", e.Path, Size(e.Limit))
}

// Read returns the contents of path, refusing anything that is not a
// regular file and any file longer than limit bytes. Errors name the path.
func Read(path string, limit int64) ([]byte, error) {
	f, size, err := openLimited(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadAll(f, size, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// Sum256 is the SHA-256 of what Read(path, limit) returns, read a piece
// at a time: a caller that only needs the digest (to look a file up in a
// cache) never holds the whole file, whose fresh memory costs more to
// fault in than the read itself.
func Sum256(path string, limit int64) ([32]byte, error) {
	var sum [32]byte
	f, _, err := openLimited(path, limit)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return sum, err
	case n > limit:
		return sum, &TooLargeError{Path: path, Limit: limit}
	}
	h.Sum(sum[:0])
	return sum, nil
}

// openLimited opens path as openRegular does and refuses it, closed,
// when it is longer than limit bytes; it returns the file's size.
func openLimited(path string, limit int64) (*os.File, int64, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, 0, err
	}
	if fi.Size() > limit {
		f.Close()
		return nil, 0, &TooLargeError{Path: path, Limit: limit}
	}
	return f, fi.Size(), nil
}

// ReadAll reads r to its end, at most limit+1 bytes (its size may change
// while it is read), into a buffer made for size bytes. io.ReadAll grows
// its buffer from 512 bytes, copying as it goes, and in a new process
// each larger buffer is fresh memory to fault in: reading Llama 3's 9 MB
// tokenizer.json took 83–100 ms that way on a VM, 42–57 ms into one
// buffer of its size.
func ReadAll(r io.Reader, size, limit int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(size, 0), limit)+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	return buf.Bytes(), err
}

// Regular returns an error naming path unless it is a regular file (a
// FIFO would block whoever opens it, a device may never end). It does
// not block.
func Regular(path string) error {
	f, _, err := openRegular(path)
	if err == nil {
		f.Close()
	}
	return err
}

func openRegular(path string) (*os.File, os.FileInfo, error) {
	// O_NONBLOCK so that opening a FIFO with no writer does not wait; it
	// changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &os.PathError{Op: "open", Path: path, Err: errors.New("not a regular file (" + Kind(fi.Mode()) + ")")}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// Kind names the type of a file that is not regular, for messages: "a
// folder", "a FIFO", "a socket", "a device".
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// Size writes a byte count for people: 64 MiB, 512 KiB, 100 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
