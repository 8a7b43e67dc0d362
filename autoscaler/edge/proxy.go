package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// StatusClientClosed is counted (never sent) when the client went away
// before the edge answered.
const StatusClientClosed = 499

// validName bounds a group or zone name taken from the path.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}$`)

// forwardedRequestHeaders go from the client to the worker.
var forwardedRequestHeaders = []string{
	"Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Authorization", "Last-Event-Id",
}

// copiedResponseHeaders go from the worker back to the client.
var copiedResponseHeaders = []string{
	"Content-Type", "Retry-After", "Mcp-Session-Id", "Www-Authenticate", "Allow", "Cache-Control",
}

// serveMCP handles /g/{group}/z/{zone}/mcp.
func (e *Edge) serveMCP(w http.ResponseWriter, r *http.Request) {
	group, zone := r.PathValue("group"), r.PathValue("zone")
	if !validName.MatchString(group) || !validName.MatchString(zone) {
		writeRPCError(w, http.StatusNotFound, nil, "no route: group and zone names are 1-63 of [A-Za-z0-9._-]")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRPCError(w, http.StatusMethodNotAllowed, nil, r.Method+" not allowed: MCP calls are POST")
		e.m.requests.WithLabelValues(group, zone, strconv.Itoa(http.StatusMethodNotAllowed)).Inc()
		return
	}
	k := zoneKey{group, zone}
	gauge := e.m.inflight.WithLabelValues(group, zone)
	summary := e.m.summary.WithLabelValues(group, zone)
	gauge.Inc()
	summary.Observe(float64(e.table.enter(k)))
	defer func() {
		including, _ := e.table.leave(k)
		summary.Observe(float64(including))
		gauge.Dec()
	}()
	code := e.route(w, r, k)
	e.m.requests.WithLabelValues(group, zone, strconv.Itoa(code)).Inc()
}

// route forwards one call of zone k and returns the status it answered
// (StatusClientClosed when the client left first).
func (e *Edge) route(w http.ResponseWriter, r *http.Request, k zoneKey) int {
	body, status, msg := serve.ReadRPCBody(w, r, MaxBodyBytes)
	if status == http.StatusBadRequest && r.Context().Err() != nil {
		return StatusClientClosed
	}
	if status != 0 {
		writeRPCError(w, status, nil, msg)
		return status
	}
	id := serve.RequestID(body)

	// At most two attempts, and the second only after a dial failure: the
	// first request never reached a worker.
	var failed *backend
	for attempt := 1; attempt <= 2; attempt++ {
		b := e.table.pick(k, failed)
		if b == nil {
			msg := fmt.Sprintf("no ready worker in group %s zone %s", k.group, k.zone)
			if failed != nil {
				msg = fmt.Sprintf("no reachable ready worker in group %s zone %s (worker %s refused the connection)", k.group, k.zone, failed.id)
			}
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
			writeRPCError(w, http.StatusServiceUnavailable, id, msg)
			return http.StatusServiceUnavailable
		}
		code, dialErr := e.forward(w, r, b, body, id)
		if dialErr == nil {
			return code
		}
		if errors.Is(dialErr, errResent) {
			e.log.Warn("worker did not answer; sending the call again (edge-resend fault)",
				"group", k.group, "zone", k.zone, "worker", b.id, "attempt", attempt)
			failed = b
			continue
		}
		e.table.markDialFailed(b)
		e.log.Warn("worker unreachable, skipped until the next discovery refresh",
			"group", k.group, "zone", k.zone, "worker", b.id, "addr", b.addr, "attempt", attempt, "err", dialErr.Error())
		failed = b
	}
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	writeRPCError(w, http.StatusServiceUnavailable, id,
		fmt.Sprintf("no reachable ready worker in group %s zone %s (two workers refused the connection)", k.group, k.zone))
	return http.StatusServiceUnavailable
}

// forward sends one call to b and copies the answer back. It returns a
// non-nil dialErr only when the connection to b could not be made, so the
// request never reached it and nothing was written to w; the caller may then
// try another worker. Otherwise it has answered w and returns the status.
func (e *Edge) forward(w http.ResponseWriter, r *http.Request, b *backend, body []byte, id json.RawMessage) (code int, dialErr error) {
	defer e.table.release(b)
	timeout := e.timeout
	if e.resend {
		timeout = min(timeout, resendTryTimeout)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+b.addr+"/mcp", bytes.NewReader(body))
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, id, fmt.Sprintf("worker %s: bad address %q: %v", b.id, b.addr, err))
		return http.StatusBadGateway, nil
	}
	for _, h := range forwardedRequestHeaders {
		for _, v := range r.Header.Values(h) {
			req.Header.Add(h, v)
		}
	}
	resp, err := e.rt.RoundTrip(req)
	if err != nil {
		switch {
		case r.Context().Err() != nil:
			return StatusClientClosed, nil
		case isDialError(err):
			return 0, err
		case e.resend:
			// The planted bug: the call may have reached the worker, and is sent again.
			return 0, fmt.Errorf("%w: %w", errResent, err)
		case errors.Is(err, context.DeadlineExceeded):
			writeRPCError(w, http.StatusGatewayTimeout, id, fmt.Sprintf("worker %s did not answer within %s", b.id, e.timeout))
			return http.StatusGatewayTimeout, nil
		default:
			e.log.Warn("worker failed after the call was sent; not retried",
				"worker", b.id, "addr", b.addr, "err", err.Error())
			writeRPCError(w, http.StatusBadGateway, id, fmt.Sprintf("worker %s failed: %v", b.id, err))
			return http.StatusBadGateway, nil
		}
	}
	defer resp.Body.Close()
	e.m.answers.WithLabelValues(b.group, b.zone, e.table.track(b), strconv.Itoa(resp.StatusCode)).Inc()
	for _, h := range copiedResponseHeaders {
		for _, v := range resp.Header.Values(h) {
			w.Header().Add(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if err := copyBody(w, resp); err != nil {
		if r.Context().Err() != nil {
			return StatusClientClosed, nil
		}
		e.log.Warn("response body cut short", "worker", b.id, "status", resp.StatusCode, "err", err.Error())
	}
	return resp.StatusCode, nil
}

// copyBody copies the worker's body to w, flushing each chunk of an event
// stream so server-sent events are not held back.
func copyBody(w http.ResponseWriter, resp *http.Response) error {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_, err := io.Copy(w, resp.Body)
		return err
	}
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errResent marks a call the edge-resend fault sends again after it was sent.
var errResent = errors.New("sent again after it reached a worker")

// resendTryTimeout is the edge-resend fault's per-try timeout.
const resendTryTimeout = time.Second

// isDialError reports whether err is a failure to connect (refused,
// unreachable, dial timeout): the request never reached the worker.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
