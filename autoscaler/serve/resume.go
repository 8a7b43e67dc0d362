package serve

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// ResumeSafe wraps ln so that a connection's read whose deadline passed
// while bytes waited in the socket returns those bytes instead of a
// timeout (the deadline still holds when nothing waits: a slow client is
// cut off as before).
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
		return readWaiting{tc}, err
	}
	return c, err
}

// readWaiting is a TCP connection whose Read, after its deadline has
// passed, still returns the bytes that wait in the socket. Its other
// methods (CloseWrite, ReadFrom for sendfile) are the TCPConn's.
type readWaiting struct{ *net.TCPConn }

func (c readWaiting) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 || len(p) == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
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
