package serve

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestResumeSafe: a read that was waiting when its deadline passed, while
// a request waited in the socket (a worker stopped and continued: the
// deadline and the bytes reach it at once), returns the request; with
// nothing waiting, or for a read begun after its deadline, the deadline
// stands. The plain listener's row shows what ResumeSafe mends: net/http
// closes such a connection unread, and the client gets a reset.
//
// The read's start is the injected clock's: the test cannot stop its own
// process, so "the read began before its deadline" is the clock's answer
// while the socket's deadline (1970) has passed.
func TestResumeSafe(t *testing.T) {
	deadline := time.Unix(1, 0)
	for _, tc := range []struct {
		name      string
		wrap      bool
		began     time.Time // the read's start, per the injected clock
		sent      string    // after the "x" the server reads first
		wantRead  string
		wantError bool
	}{
		{"woken by the deadline, a request waiting: read", true, time.Unix(0, 0), "POST /mcp", "POST /mcp", false},
		{"woken by the deadline, nothing waiting: timeout", true, time.Unix(0, 0), "", "", true},
		{"begun after the deadline, a request waiting: timeout", true, time.Unix(2, 0), "POST /mcp", "", true},
		{"plain listener, a request waiting: timeout", false, time.Time{}, "POST /mcp", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if tc.wrap {
				ln = ResumeSafe(ln)
			}
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			conn, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if rw, ok := conn.(*readWaiting); ok {
				rw.now = func() time.Time { return tc.began }
			} else if tc.wrap {
				t.Fatalf("ResumeSafe accepted a %T", conn)
			}
			// One write, one loopback segment: once the server has read
			// the "x", the rest waits in its socket.
			if _, err := client.Write([]byte("x" + tc.sent)); err != nil {
				t.Fatal(err)
			}
			one := make([]byte, 1)
			if _, err := io.ReadFull(conn, one); err != nil {
				t.Fatal(err)
			}
			if err := conn.SetReadDeadline(deadline); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, err := conn.Read(buf)
			if got := string(buf[:n]); got != tc.wantRead || (err != nil) != tc.wantError {
				t.Fatalf("Read after the deadline = %q, %v; want %q, error %v", got, err, tc.wantRead, tc.wantError)
			}
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("error %v, want a deadline error", err)
			}
		})
	}
}
