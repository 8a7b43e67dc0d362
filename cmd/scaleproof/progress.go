package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
)

// progressMode is how the live state is shown.
type progressMode int

const (
	progressOff   progressMode = iota // --quiet: nothing
	progressPlain                     // not a terminal (CI): a plain line every 5 s, on each phase and each decision
	progressBars                      // a terminal: one mpb bar per scenario, redrawn in place
)

// progress shows a run's live state: scenario and phase, elapsed of
// expected, VUs, count/max/ready, calls ok/429/5xx so far, and the
// autoscaler's last decision. Safe for concurrent use; update is called on
// every zone sample and phase change.
type progress struct {
	mu   sync.Mutex
	w    io.Writer
	mode progressMode

	// plain mode
	last     time.Time
	phase    string
	scenario string
	decision string

	// bars mode: created on the first update, so that lines printed before
	// the scenarios start are not redrawn over.
	bars     *mpb.Progress
	bar      *mpb.Bar
	barState *barState
	barWidth int
}

// barState is what one scenario's bar shows, frozen when it completes.
type barState struct {
	mu   sync.Mutex
	st   scenarios.Status
	at   time.Time // when st arrived (elapsed keeps ticking between samples)
	done bool
}

func (b *barState) get() (scenarios.Status, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	el := b.st.Elapsed
	if !b.done {
		el += time.Since(b.at)
	}
	return b.st, el
}

// newProgress picks the mode: off when quiet, bars when w is a terminal,
// plain lines otherwise.
func newProgress(w io.Writer, quiet bool) *progress {
	switch {
	case quiet:
		return newProgressMode(w, progressOff)
	case isTerminal(w):
		return newProgressMode(w, progressBars)
	}
	return newProgressMode(w, progressPlain)
}

func newProgressMode(w io.Writer, m progressMode) *progress {
	return &progress{w: w, mode: m, barWidth: 24}
}

// isTerminal is true when w is a terminal whose size is known (a pseudo
// terminal of size 0×0, as some CI runners give, counts as none: bars could
// not be drawn on it).
func isTerminal(w io.Writer) bool {
	if _, ok := w.(*os.File); !ok {
		return false
	}
	cw := cupwriter.New(w, false)
	if !cw.IsTerminal() {
		return false
	}
	width, _, err := cw.GetTermSize()
	return err == nil && width > 0
}

func (p *progress) update(s scenarios.Status) {
	switch p.mode {
	case progressPlain:
		p.plain(s)
	case progressBars:
		p.barUpdate(s)
	}
}

// statusLine is the one-line state, shared by both modes.
func statusLine(s scenarios.Status, elapsed time.Duration) string {
	return fmt.Sprintf("%s  VUs %2d  count %d/%d ready %d  %s",
		elapsedOf(elapsed, s.Expected), s.VUs, s.Count, s.Max, s.Ready, callsText(s))
}

// callsText is the calls so far, "ok N 429 N 5xx N"; while sharded loads
// run and none has reported yet, it says when they will.
func callsText(s scenarios.Status) string {
	if s.Shards > 1 && s.VUs > 0 && s.Calls == (reports.Calls{}) {
		return fmt.Sprintf("calls: from the %d shards when the load ends", s.Shards)
	}
	return fmt.Sprintf("ok %s 429 %s 5xx %s",
		render.FormatCount(s.Calls.OK), render.FormatCount(s.Calls.TooMany), render.FormatCount(s.Calls.Server5xx))
}

func (p *progress) plain(s scenarios.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.Phase != p.phase || s.Scenario != p.scenario || time.Since(p.last) >= 5*time.Second {
		fmt.Fprintf(p.w, "%-14s %-40s %s\n", s.Scenario, trim(s.Phase, 40), statusLine(s, s.Elapsed))
		p.last, p.phase, p.scenario = time.Now(), s.Phase, s.Scenario
	}
	// A decision is printed when its action changes ("up 1->3", "hold 3->3"),
	// not for every new reason or cooldown countdown of the same action.
	if key, _, _ := strings.Cut(s.Decision, ":"); s.Decision != "" && s.Scenario+key != p.decision {
		fmt.Fprintf(p.w, "%-14s decision: %s\n", s.Scenario, s.Decision)
		p.decision = s.Scenario + key
	}
}

func (p *progress) barUpdate(s scenarios.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bars == nil {
		// On a terminal mpb sizes the bars to it; elsewhere (tests) it still
		// redraws, at its default width.
		p.bars = mpb.New(mpb.WithOutput(p.w), mpb.WithRefreshRate(200*time.Millisecond),
			mpb.ContainerOptional(mpb.WithAutoRefresh(), !isTerminal(p.w)))
	}
	if p.bar == nil || p.barState.st.Scenario != s.Scenario {
		p.completeLocked()
		p.barState = &barState{st: s, at: time.Now()}
		p.bar = p.newBar(p.barState, max(int64(s.Expected.Seconds()), 1))
	}
	bs := p.barState
	bs.mu.Lock()
	bs.st, bs.at = s, time.Now()
	bs.mu.Unlock()
	el := int64(s.Elapsed.Seconds())
	if total := int64(s.Expected.Seconds()); el >= total {
		p.bar.SetTotal(el+1, false) // longer than expected: keep the bar open
	}
	p.bar.SetCurrent(el)
}

// newBar draws one scenario in three lines:
//
//	sustained      [=======>-----------]  12s of 30s  hold at 3 for 6s
//	  VUs 64  count 3/3 ready 3  ok 1 234 429 12 5xx 0
//	  last decision: up 1->3: worker w3 high: 32/32 in flight > 80%; …
func (p *progress) newBar(bs *barState, total int64) *mpb.Bar {
	name := func(decor.Statistics) string {
		st, _ := bs.get()
		return fmt.Sprintf("%-14s", st.Scenario)
	}
	timing := func(decor.Statistics) string {
		st, el := bs.get()
		return fmt.Sprintf("%s  %s", elapsedOf(el, st.Expected), st.Phase)
	}
	line := func(text func(scenarios.Status) string) mpb.BarFiller {
		return mpb.BarFillerFunc(func(w io.Writer, stat decor.Statistics) error {
			st, _ := bs.get()
			l := "  " + text(st)
			if stat.AvailableWidth > 0 {
				l = trim(l, stat.AvailableWidth)
			}
			_, err := io.WriteString(w, l+"\n")
			return err
		})
	}
	state := line(func(st scenarios.Status) string {
		return fmt.Sprintf("VUs %d  count %d/%d ready %d  %s", st.VUs, st.Count, st.Max, st.Ready, callsText(st))
	})
	decision := line(func(st scenarios.Status) string { return "last decision: " + cmp.Or(st.Decision, "none yet") })
	return p.bars.New(total, mpb.BarStyle().Lbound("[").Rbound("]"),
		mpb.BarWidth(p.barWidth),
		mpb.PrependDecorators(decor.Any(name)),
		mpb.AppendDecorators(decor.Any(timing)),
		mpb.BarBtmExtender(state, decision),
	)
}

// elapsedOf is "12s of ~30s" while a scenario runs within its expected
// length (a rough estimate: the waits are bounded by their own timeouts),
// and "58s, over the ~42s expected" once it runs longer, never "58s of 42s".
func elapsedOf(el, expected time.Duration) string {
	if el > expected+time.Second/2 {
		return fmt.Sprintf("%4.0fs, over the ~%.0fs expected", el.Seconds(), expected.Seconds())
	}
	return fmt.Sprintf("%4.0fs of ~%.0fs", el.Seconds(), expected.Seconds())
}

// completeLocked freezes and completes the current scenario's bar.
func (p *progress) completeLocked() {
	if p.bar == nil {
		return
	}
	p.barState.mu.Lock()
	p.barState.done = true
	p.barState.mu.Unlock()
	p.bar.SetTotal(-1, true) // complete at the current value
	p.bar = nil
}

// done ends the live view (completes the last bar and waits for the final
// redraw) so that what follows prints below it. Safe to call more than once.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != progressBars || p.bars == nil {
		return
	}
	p.completeLocked()
	p.bars.Wait()
	p.bars = nil
}

// trim cuts s to at most n runes, marking the cut with "…".
func trim(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
