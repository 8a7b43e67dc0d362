package sim

import (
	"container/heap"
	"sync/atomic"
	"time"
)

// Epoch is virtual time zero: every simulated run starts here, so results
// do not depend on the wall clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// event is one thing to do at a virtual time. seq breaks ties: events at
// the same time run in the order they were scheduled.
type event struct {
	at  time.Duration // since Epoch
	seq uint64
	fn  func()
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = event{}
	*h = old[:n-1]
	return e
}

// loop is the discrete-event core: a virtual clock and its event queue.
// Only the goroutine that runs the loop (or a scenario script it handed
// control to) schedules events; the controller's goroutines only read the
// clock, during a pass, while it stands still.
type loop struct {
	now    atomic.Int64 // ns since Epoch
	q      eventHeap
	seq    uint64
	events uint64 // events run, for the speed report
}

// Now is the virtual time (the controller's Clock).
func (l *loop) Now() time.Time { return Epoch.Add(time.Duration(l.now.Load())) }

// since is the virtual time as an offset from Epoch.
func (l *loop) since() time.Duration { return time.Duration(l.now.Load()) }

// at schedules fn at offset t (never before now).
func (l *loop) at(t time.Duration, fn func()) {
	if now := l.since(); t < now {
		t = now
	}
	l.seq++
	heap.Push(&l.q, event{at: t, seq: l.seq, fn: fn})
}

// after schedules fn d from now.
func (l *loop) after(d time.Duration, fn func()) { l.at(l.since()+max(d, 0), fn) }

// run runs events in order until the queue is empty, stop returns true, or
// the next event is past limit. It returns false when it stopped at limit.
func (l *loop) run(limit time.Duration, stop func() bool) bool {
	for len(l.q) > 0 {
		if stop() {
			return true
		}
		if l.q[0].at > limit {
			return false
		}
		e := heap.Pop(&l.q).(event)
		l.now.Store(int64(e.at))
		l.events++
		e.fn()
	}
	return true
}
