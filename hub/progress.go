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

// ProgressReport is one report of a pull's progress, for a program that
// shows it its own way (Options.OnProgress); String is the line the
// hub writes to Options.Progress.
type ProgressReport struct {
	// Repo is the repository being pulled; Files how many of its files
	// are downloaded.
	Repo  string
	Files int
	// Done and Total count the bytes of those files, Rate is this run's
	// bytes per second.
	Done, Total int64
	Rate        float64
	Elapsed     time.Duration
	// Final is set on the last report; OK then says the pull succeeded.
	Final, OK bool
}

// Fraction is the share of the bytes done, from 0 to 1.
func (r ProgressReport) Fraction() float64 {
	if r.Total <= 0 {
		return 1
	}
	return min(float64(max(r.Done, 0))/float64(r.Total), 1)
}

// String is the report for people: bytes done/total, percent, rate and
// ETA; on the last one a summary, or where the pull stopped.
func (r ProgressReport) String() string {
	if r.Final && r.OK {
		return fmt.Sprintf("%s  %s in %s (%s/s)", r.Repo, FormatSize(r.Total), formatDuration(r.Elapsed), FormatSize(int64(r.Rate)))
	}
	eta := "--"
	if r.Rate > 0 {
		eta = formatDuration(time.Duration(float64(max(r.Total-r.Done, 0)) / r.Rate * float64(time.Second)))
	}
	s := fmt.Sprintf("%s  %s / %s  %3.0f%%  %s/s  ETA %s",
		r.Repo, FormatSize(r.Done), FormatSize(r.Total), 100*r.Fraction(), FormatSize(int64(r.Rate)), eta)
	if r.Final {
		s += "  stopped"
	}
	return s
}

// progress reports a pull's bytes done and total, rate and ETA on a writer
// and to a callback. A nil *progress reports nothing. Its methods are safe
// for concurrent use.
type progress struct {
	w     io.Writer
	on    func(ProgressReport)
	files int
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
// to w and on (either may be nil), or returns nil when both are.
func newProgress(w io.Writer, on func(ProgressReport), label string, files int, total int64) *progress {
	if w == nil && on == nil {
		return nil
	}
	p := &progress{w: w, on: on, files: files, tty: w != nil && isTerminal(w), label: label, total: total, start: time.Now(), stop: make(chan struct{})}
	every := ttyEvery
	if w != nil && !p.tty {
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
	p.send(p.report(time.Since(p.start), false, false))
}

// send gives r to the callback and writes it.
func (p *progress) send(r ProgressReport) {
	if p.on != nil {
		p.on(r)
	}
	if p.w != nil {
		p.print(r.String(), r.Final)
	}
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

// report is the state after elapsed.
func (p *progress) report(elapsed time.Duration, final, ok bool) ProgressReport {
	return ProgressReport{Repo: p.label, Files: p.files, Done: p.done, Total: p.total, Rate: p.rate(elapsed), Elapsed: elapsed, Final: final, OK: ok}
}

// line is the report after elapsed, for people.
func (p *progress) line(elapsed time.Duration) string {
	return p.report(elapsed, false, false).String()
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
	p.send(p.report(time.Since(p.start), true, ok))
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
