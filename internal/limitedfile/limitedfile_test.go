package limitedfile

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte("{}"), 0o644)
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, make([]byte, 101), 0o644)
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want, reason string
	}{
		{small, "", "a small regular file is read whole"},
		{big, "larger than 100 bytes", "a file over the limit is refused before it is read"},
		{fifo, "not a regular file (a FIFO)", "a FIFO with no writer is refused without blocking"},
		{dir, "not a regular file (a folder)", "a folder is refused"},
		{"/dev/zero", "not a regular file (a device)", "an endless device is refused"},
		{filepath.Join(dir, "none"), "no such file", "a missing file says so"},
	} {
		data, err := Read(tc.path, 100)
		switch {
		case tc.want == "" && (err != nil || string(data) != "{}"):
			t.Errorf("%s: Read = %q, %v", tc.reason, data, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path)):
			t.Errorf("%s: error %v, want one naming %s and saying %q", tc.reason, err, tc.path, tc.want)
		}
		// Sum256 reads the same files, and refuses the same ones.
		sum, err := Sum256(tc.path, 100)
		switch {
		case tc.want == "" && (err != nil || sum != sha256.Sum256([]byte("{}"))):
			t.Errorf("%s: Sum256 = %x, %v", tc.reason, sum, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path)):
			t.Errorf("%s: Sum256's error %v, want one naming %s and saying %q", tc.reason, err, tc.path, tc.want)
		}
	}
	var tl *TooLargeError
	if _, err := Read(big, 100); !errors.As(err, &tl) || tl.Limit != 100 {
		t.Errorf("over the limit: %v, want a *TooLargeError", err)
	}
}
