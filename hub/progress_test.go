package hub

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1.0 kB", 18754: "18.8 kB", 695_300_000: "695.3 MB",
		999_960: "1.0 MB", 2_500_000_000: "2.5 GB", 3_000_000_000_000_000: "3000.0 TB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 45 * time.Second: "45s", 187 * time.Second: "3m07s", 3720 * time.Second: "1h02m",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	p := &progress{label: "org/m", total: 1_000_000}
	p.resumed(200_000) // on disk before: not in the rate
	p.add(300_000)
	want := "org/m  500.0 kB / 1.0 MB   50%  100.0 kB/s  ETA 5s"
	if got := p.line(3 * time.Second); got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	p.add(-500_000) // a server that ignored Range: start over
	if got := p.line(time.Second); !strings.Contains(got, "0 B / 1.0 MB    0%  0 B/s  ETA --") {
		t.Errorf("line after a restart = %q", got)
	}
}

func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, nil, "org/m", 2, 2000)
	p.add(1000)
	p.draw()
	p.add(1000)
	p.finish(true)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "org/m: downloading 2 files, 2.0 kB" ||
		!strings.HasPrefix(lines[1], "org/m  1.0 kB / 2.0 kB   50%") || !strings.HasPrefix(lines[2], "org/m  2.0 kB in ") ||
		strings.Contains(buf.String(), "\r") {
		t.Errorf("plain progress:\n%s", buf.String())
	}
	if p := newProgress(nil, nil, "x", 1, 1); p != nil {
		t.Error("a nil writer gave a progress")
	}
	var none *progress
	none.add(1)
	none.resumed(1)
	none.finish(false)
}

func TestProgressTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true, label: "org/m", total: 2000, start: time.Now(), stop: make(chan struct{})}
	p.add(1500)
	p.draw()
	p.add(-1500)
	p.draw()
	p.finish(false)
	out := buf.String()
	parts := strings.Split(out, "\r")
	if len(parts) != 4 || parts[0] != "" || !strings.HasSuffix(out, "stopped\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("terminal progress: %q", out)
	}
	if len(parts[2]) != len(parts[1]) {
		t.Errorf("a shorter line does not blank out the longer one before it: %q", out)
	}
}

func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) || isTerminal(&bytes.Buffer{}) {
		t.Error("a pipe or a buffer taken for a terminal")
	}
}

// TestProgressReports: a program that shows the progress its own way gets
// each report as a value, and nothing is written.
func TestProgressReports(t *testing.T) {
	var got []ProgressReport
	p := newProgress(nil, func(r ProgressReport) { got = append(got, r) }, "org/m", 2, 2000)
	p.add(500)
	p.draw()
	p.add(1500)
	p.finish(true)
	if len(got) != 2 || got[0].Fraction() != 0.25 || got[0].Final || got[0].Files != 2 ||
		!got[1].Final || !got[1].OK || got[1].Fraction() != 1 || !strings.HasPrefix(got[1].String(), "org/m  2.0 kB in ") {
		t.Errorf("reports %+v", got)
	}
}
