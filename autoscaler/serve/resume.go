package serve

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// ResumeSafe wraps ln so that a connection's read that was waiting when
// its deadline passed returns the bytes that wait in the socket, if any,
// instead of a timeout. A read begun after its deadline, and a read with
// nothing waiting, time out as before: a slow client is cut off as before.
//
// Why: a process that is stopped and continued (SIGSTOP/SIGCONT, which the
// outage scenario uses to freeze a worker; a paused VM; a long stall) sees
// every deadline that passed meanwhile fire at the moment it resumes,
// together with the bytes that arrived meanwhile, and Go's poller may wake
// the reader with either first. net/http then gives up on a request that
// came in time (a new connection's first request must arrive within
// ReadHeaderTimeout, a kept-alive one's within IdleTimeout), closes the
// connection with the request unread, and the kernel answers the client
// with a reset: the edge's call fails with 502 "connection reset by peer".
func ResumeSafe(ln net.Listener) net.Listener { return resumeSafe{ln} }

type resumeSafe struct{ net.Listener }

func (l resumeSafe) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		return &readWaiting{TCPConn: tc, now: time.Now}, err
	}
	return c, err
}

// readWaiting is a TCP connection whose Read, woken by its deadline,
// still returns the bytes that wait in the socket. Its other methods
// (CloseWrite, ReadFrom for sendfile) are the TCPConn's.
type readWaiting struct {
	*net.TCPConn
	now      func() time.Time
	deadline atomic.Int64 // the read deadline in Unix ns; 0: none
}

func (c *readWaiting) SetDeadline(t time.Time) error {
	c.deadline.Store(unixNano(t))
	return c.TCPConn.SetDeadline(t)
}

func (c *readWaiting) SetReadDeadline(t time.Time) error {
	c.deadline.Store(unixNano(t))
	return c.TCPConn.SetReadDeadline(t)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func (c *readWaiting) Read(p []byte) (int, error) {
	began := c.now().UnixNano()
	n, err := c.TCPConn.Read(p)
	if n > 0 || len(p) == 0 || !errors.Is(err, os.ErrDeadlineExceeded) || began >= c.deadline.Load() {
		return n, err
	}
	rc, rerr := c.SyscallConn()
	if rerr != nil {
		return n, err
	}
	// The socket is non-blocking (Go's poller): read(2) returns what waits,
	// or EAGAIN when nothing does; the poller's deadline is not consulted.
	var got int
	var gerr error
	if cerr := rc.Control(func(fd uintptr) { got, gerr = syscall.Read(int(fd), p) }); cerr != nil || gerr != nil || got <= 0 {
		return n, err
	}
	return got, nil
}
