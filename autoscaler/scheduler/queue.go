package scheduler

import "errors"

// ErrQueueFull is Queue.Push's error when the queue holds its bound.
var ErrQueueFull = errors.New("queue full")

// Queue is a bounded FIFO of calls: Push appends at the back up to the
// bound, Pop takes the front, PushFront puts a re-queued call back at the
// front (the oldest call goes first again) even past the bound, since it was
// admitted already. Not safe for concurrent use: the Scheduler holds its lock.
type Queue[T comparable] struct {
	items []T
	limit int
}

// NewQueue returns an empty queue holding at most limit items (limit >= 1;
// a smaller limit is taken as 1).
func NewQueue[T comparable](limit int) *Queue[T] {
	return &Queue[T]{limit: max(limit, 1)}
}

// Len is the number of items waiting.
func (q *Queue[T]) Len() int { return len(q.items) }

// Limit is the bound Push enforces.
func (q *Queue[T]) Limit() int { return q.limit }

// Push appends v at the back, or returns ErrQueueFull when Len() >= Limit().
func (q *Queue[T]) Push(v T) error {
	if len(q.items) >= q.limit {
		return ErrQueueFull
	}
	q.items = append(q.items, v)
	return nil
}

// PushFront puts v at the front, whatever the bound.
func (q *Queue[T]) PushFront(v T) {
	q.items = append(q.items, v)
	copy(q.items[1:], q.items)
	q.items[0] = v
}

// Pop removes and returns the front item; ok is false when the queue is empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if len(q.items) == 0 {
		return v, false
	}
	v = q.items[0]
	var zero T
	q.items[0] = zero
	q.items = q.items[1:]
	return v, true
}

// Remove takes v out of the queue wherever it is (a caller that gave up
// while waiting); it reports whether v was there.
func (q *Queue[T]) Remove(v T) bool {
	for i, x := range q.items {
		if x == v {
			q.items = append(q.items[:i], q.items[i+1:]...)
			return true
		}
	}
	return false
}
