package load

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// HTTPCall returns an Exec that sends one plain HTTP request per iteration
// (method, url, body, header copied at construction) and classifies it by
// status: 2xx ok, 429 "429" (with Retry-After), other 4xx "4xx", 5xx "5xx",
// 3xx and others bad_response (redirects are not followed), no answer
// transport (interrupted once ctx is done). The body is read to its end, at
// most MaxResponseBytes, so the connection is reused; a longer or cut body
// is bad_response.
func HTTPCall(hc *http.Client, method, url string, body []byte, header http.Header) Exec {
	client := noRedirects(hc)
	hdr := header.Clone()
	return func(ctx context.Context, _ int, _ int64) Result {
		var rd io.Reader
		if len(body) > 0 {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, rd)
		if err != nil {
			return Result{Class: ClassTransport, Err: "load: build request: " + err.Error()}
		}
		for k, v := range hdr {
			req.Header[k] = v // read-only for the transport
		}
		resp, err := client.Do(req)
		if err != nil {
			return failed(ctx, ClassTransport, 0, err.Error())
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes+1))
		code := resp.StatusCode
		switch {
		case err != nil:
			return failed(ctx, ClassBadResponse, code, "truncated body: "+err.Error())
		case n > MaxResponseBytes:
			return Result{Class: ClassBadResponse, Status: code, Err: "body over 4 MiB"}
		case code >= 200 && code <= 299:
			return Result{Class: ClassOK, Status: code}
		case code == http.StatusTooManyRequests:
			return Result{Class: Class429, Status: code, Err: resp.Status,
				RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), resp.Header.Get("Date"), time.Now())}
		case code >= 400 && code <= 499:
			return Result{Class: Class4xx, Status: code, Err: resp.Status}
		case code >= 500 && code <= 599:
			return Result{Class: Class5xx, Status: code, Err: resp.Status,
				RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), resp.Header.Get("Date"), time.Now())}
		}
		return Result{Class: ClassBadResponse, Status: code, Err: "unexpected status " + resp.Status}
	}
}

// Wire counts the bytes a client sent and received on its connections
// (k6's data_sent and data_received), headers and framing included.
type Wire struct{ sent, received atomic.Int64 }

// Sent is the number of bytes written to the connections.
func (w *Wire) Sent() int64 { return w.sent.Load() }

// Received is the number of bytes read from the connections.
func (w *Wire) Received() int64 { return w.received.Load() }

// Add counts bytes sent and received elsewhere (a distributed load's
// shards).
func (w *Wire) Add(sent, received int64) {
	w.sent.Add(sent)
	w.received.Add(received)
}

type countingConn struct {
	net.Conn
	w *Wire
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.received.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.w.sent.Add(int64(n))
	return n, err
}

// NewHTTPClient returns a client for load: HTTP/1.1 keep-alive with up to
// conns idle connections kept (one per VU is the usual choice), no
// compression, timeout per request (0: none), and every connection's bytes
// counted in w (nil: not counted).
func NewHTTPClient(conns int, timeout time.Duration, w *Wire) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: max(conns, 1),
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil || w == nil {
				return c, err
			}
			return countingConn{Conn: c, w: w}, nil
		},
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}
