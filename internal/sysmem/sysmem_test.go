package sysmem

import (
	"runtime"
	"testing"
)

func TestTotal(t *testing.T) {
	n := Total()
	if (runtime.GOOS == "linux" || runtime.GOOS == "darwin") && n < 64<<20 {
		t.Errorf("Total() = %d bytes, want the machine's memory", n)
	}
}
