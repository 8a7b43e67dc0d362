package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/scenarios"
)

// progress prints the live state: one rewritten line on a terminal, a plain
// line every few seconds (and on every phase change) otherwise.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	off     bool
	tty     bool
	last    time.Time
	phase   string
	printed bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w, off: quiet}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) update(s scenarios.Status) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%-14s %-40s %4.0fs/%-4.0fs VUs %2d  count %d/%d ready %d  ok %d 429 %d 5xx %d",
		s.Scenario, trim(s.Phase, 40), s.Elapsed.Seconds(), s.Expected.Seconds(), s.VUs, s.Count, s.Max, s.Ready,
		s.Calls.OK, s.Calls.TooMany, s.Calls.Server5xx)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.printed = true
		return
	}
	if s.Phase != p.phase || time.Since(p.last) >= 5*time.Second {
		fmt.Fprintln(p.w, line)
		p.last, p.phase = time.Now(), s.Phase
	}
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.printed {
		fmt.Fprintln(p.w)
	}
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
