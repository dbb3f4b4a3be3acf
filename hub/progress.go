package hub

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// How often the progress is shown: redrawn in place on a terminal, a plain
// line otherwise (logs, pipes, CI).
var (
	ttyEvery   = 200 * time.Millisecond
	plainEvery = 5 * time.Second
)

// progress reports a pull's bytes done and total, rate and ETA on a writer.
// A nil *progress reports nothing. Its methods are safe for concurrent use.
type progress struct {
	w     io.Writer
	tty   bool
	label string
	total int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	done  int64 // bytes of the pulled files on disk
	base  int64 // of which on disk before this run: not counted in the rate
	width int   // length of the last line drawn on a terminal
}

// newProgress starts reporting the download of files totalling total bytes
// to w, or returns nil when w is nil.
func newProgress(w io.Writer, label string, files int, total int64) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, tty: isTerminal(w), label: label, total: total, start: time.Now(), stop: make(chan struct{})}
	every := ttyEvery
	if !p.tty {
		every = plainEvery
		fmt.Fprintf(w, "%s: downloading %d files, %s\n", label, files, FormatSize(total))
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	})
	return p
}

// isTerminal reports whether w is a terminal (a character device), where
// the progress line can be redrawn with \r.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// resumed counts n bytes that an earlier run left on disk.
func (p *progress) resumed(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done += n
	p.base += n
	p.mu.Unlock()
}

// add counts n bytes downloaded (negative when a transfer starts over).
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done += n
	p.mu.Unlock()
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print(p.line(time.Since(p.start)), false)
}

// print writes one report: on a terminal over the previous one, and ending
// the line when final; elsewhere as a line of its own.
func (p *progress) print(s string, final bool) {
	if !p.tty {
		fmt.Fprintln(p.w, s)
		return
	}
	pad := strings.Repeat(" ", max(p.width-len(s), 0))
	p.width = len(s)
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r%s%s%s", s, pad, end)
}

// line is the report after elapsed: bytes done/total, percent, rate, ETA.
func (p *progress) line(elapsed time.Duration) string {
	rate := p.rate(elapsed)
	eta := "--"
	if rate > 0 {
		eta = formatDuration(time.Duration(float64(max(p.total-p.done, 0)) / rate * float64(time.Second)))
	}
	pct := 100.0
	if p.total > 0 {
		pct = min(100*float64(max(p.done, 0))/float64(p.total), 100)
	}
	return fmt.Sprintf("%s  %s / %s  %3.0f%%  %s/s  ETA %s",
		p.label, FormatSize(p.done), FormatSize(p.total), pct, FormatSize(int64(rate)), eta)
}

// rate is this run's bytes per second.
func (p *progress) rate(elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(max(p.done-p.base, 0)) / elapsed.Seconds()
}

// finish stops the reports and writes the last one: a summary when ok,
// else where the download stopped.
func (p *progress) finish(ok bool) {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := time.Since(p.start)
	s := p.line(elapsed) + "  stopped"
	if ok {
		s = fmt.Sprintf("%s  %s in %s (%s/s)", p.label, FormatSize(p.total), formatDuration(elapsed), FormatSize(int64(p.rate(elapsed))))
	}
	p.print(s, true)
}

// FormatSize writes a byte count in decimal units, as the hub shows sizes:
// 512 B, 18.8 kB, 695.3 MB, 2.5 GB.
func FormatSize(n int64) string {
	if n < 1000 && n > -1000 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"kB", "MB", "GB", "TB"}
	f, i := float64(n)/1000, 0
	for math.Abs(f) >= 999.95 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// formatDuration writes d to the second: 45s, 3m07s, 1h02m.
func formatDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}
