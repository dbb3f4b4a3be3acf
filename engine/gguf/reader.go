package gguf

import (
	"encoding/binary"
	"fmt"
)

// reader reads the header's little-endian fields from the mapped file,
// checking every length against the bytes left before taking them, and
// charging what it decodes against the header budget before it is
// allocated.
type reader struct {
	buf    []byte
	off    uint64
	budget uint64 // bytes of memory the decoded header may still take
}

// errorf is an error at the reader's offset.
func (r *reader) errorf(format string, args ...any) error {
	return errorAt(r.off, format, args...)
}

// errorAt is an error at offset off: where the field at fault starts.
func errorAt(off uint64, format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", off, fmt.Sprintf(format, args...))
}

// left is the number of bytes after the offset.
func (r *reader) left() uint64 { return uint64(len(r.buf)) - r.off }

// take returns the next n bytes; what names them for the error.
func (r *reader) take(n uint64, what string) ([]byte, error) {
	if n > r.left() {
		return nil, r.errorf("%s of %d bytes runs past the end of the %d-byte file (truncated?)", what, n, len(r.buf))
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a string of at most limit bytes (a u64 length, then the
// bytes) and copies it out of the mapping.
func (r *reader) str(what string, limit uint64) (string, error) {
	start := r.off
	n, err := r.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > limit {
		return "", errorAt(start, "%s of %d bytes, more than the %d Driftwood reads", what, n, limit)
	}
	if err := r.charge(n, start); err != nil {
		return "", err
	}
	b, err := r.take(n, what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// charge takes n bytes from the header budget, for what starts at off.
func (r *reader) charge(n, off uint64) error {
	if n > r.budget {
		return errorAt(off, "the header takes more than the %d bytes of memory Driftwood allows it (MaxHeaderBytes)", MaxHeaderBytes)
	}
	r.budget -= n
	return nil
}
