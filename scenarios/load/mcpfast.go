package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// FastOptions configure MCPToolCallFast.
type FastOptions struct {
	// VUs is the number of VU numbers (1..VUs) that get a connection of
	// their own; calls from higher VU numbers share a pool.
	VUs int
	// Timeout bounds each call (0: none but ctx).
	Timeout time.Duration
	// Wire, when set, counts the bytes sent and received.
	Wire *Wire
}

// MCPToolCallFast is MCPToolCall for plain http:// targets with a lighter
// client: each VU keeps one HTTP/1.1 keep-alive connection of its own and
// writes a request built in a reused buffer, and the answer is read
// without net/http. Requests and classification are the same as
// MCPToolCall's (one class per call; Retry-After; JSON and event-stream
// answers; redirects not followed), so results compare one to one. A
// connection that fails or says "Connection: close" is dropped and dialed
// again on the VU's next call. Chunked and Content-Length bodies are read;
// anything else that is not HTTP/1.x is a bad_response. It returns an error
// for a URL that is not http:// (use MCPToolCall for https).
func MCPToolCallFast(rawURL, tool string, args map[string]any, header http.Header, o FastOptions) (Exec, error) {
	if args == nil {
		args = map[string]any{}
	}
	params, err := json.Marshal(struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}{tool, args})
	if err != nil {
		return nil, fmt.Errorf("load: encode tools/call params: %w", err)
	}
	f, err := newFast(http.MethodPost, rawURL, header, o, true)
	if err != nil {
		return nil, err
	}
	f.params = params
	return f.exec, nil
}

// HTTPCallFast is HTTPCall on the fast client (see MCPToolCallFast): same
// request, same classification by status, for http:// URLs and any method
// but HEAD and CONNECT. The body (nil for none) is sent with each request.
func HTTPCallFast(method, rawURL string, body []byte, header http.Header, o FastOptions) (Exec, error) {
	if method == http.MethodHead || method == http.MethodConnect || method == "" || !validHeader(method, "") {
		return nil, fmt.Errorf("load: fast HTTP client: method %q not supported (use HTTPCall)", method)
	}
	f, err := newFast(method, rawURL, header, o, false)
	if err != nil {
		return nil, err
	}
	f.body = append([]byte(nil), body...)
	return f.exec, nil
}

func newFast(method, rawURL string, header http.Header, o FastOptions, mcp bool) (*fastMCP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("load: fast client wants an http://host[:port]/path URL, got %q", rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), u.Host)
	for k, vs := range header {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Content-Length" || ck == "Host" || ck == "Transfer-Encoding" || (mcp && (ck == "Content-Type" || ck == "Accept")) {
			continue
		}
		for _, v := range vs {
			if !validHeader(ck, v) {
				return nil, fmt.Errorf("load: header %q: not a valid HTTP header field", ck)
			}
			fmt.Fprintf(&head, "%s: %s\r\n", ck, v)
		}
	}
	if mcp {
		head.WriteString("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
	}
	head.WriteString("Content-Length: ")
	f := &fastMCP{addr: addr, head: head.Bytes(), mcp: mcp, o: o,
		dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
	f.conns = make([]*fastConn, max(o.VUs, 0))
	for i := range f.conns {
		f.conns[i] = &fastConn{}
	}
	f.pool.New = func() any { return &fastConn{} }
	return f, nil
}

type fastMCP struct {
	mcp    bool   // tools/call (params) or plain HTTP (body)
	body   []byte // plain HTTP
	addr   string
	head   []byte // request line and headers up to "Content-Length: "
	params []byte
	o      FastOptions
	dialer net.Dialer
	ids    atomic.Int64
	conns  []*fastConn // index VU-1, each used by its VU only
	pool   sync.Pool   // for VU numbers beyond conns
}

type fastConn struct {
	c       net.Conn
	mu      sync.Mutex // guards live, for the context watcher
	live    net.Conn   // c, as the watcher sees it
	watched context.Context
	unwatch func() bool
	br      *bufio.Reader
	req     []byte // request buffer, reused
	buf     []byte // body buffer, reused
}

func (c *fastConn) close() {
	if c.c != nil {
		_ = c.c.Close()
		c.c = nil
		c.mu.Lock()
		c.live = nil
		c.mu.Unlock()
	}
}

var errFastProtocol = errors.New("malformed HTTP/1.1 response")

func (f *fastMCP) exec(ctx context.Context, vu int, _ int64) Result {
	var fc *fastConn
	if vu >= 1 && vu <= len(f.conns) {
		fc = f.conns[vu-1]
	} else {
		fc = f.pool.Get().(*fastConn)
		defer f.pool.Put(fc)
	}
	if ctx.Err() != nil {
		return failed(ctx, ClassTransport, 0, "not sent")
	}
	id := f.ids.Add(1)
	if fc.c == nil {
		c, err := f.dialer.DialContext(ctx, "tcp", f.addr)
		if err != nil {
			return failed(ctx, ClassTransport, 0, err.Error())
		}
		if f.o.Wire != nil {
			c = countingConn{Conn: c, w: f.o.Wire}
		}
		fc.c = c
		fc.mu.Lock()
		fc.live = c
		fc.mu.Unlock()
		if fc.br == nil {
			fc.br = bufio.NewReaderSize(c, 8<<10)
		} else {
			fc.br.Reset(c)
		}
	}
	// The call ends at the timeout or when ctx is done, whichever is first.
	var deadline time.Time
	if f.o.Timeout > 0 {
		deadline = time.Now().Add(f.o.Timeout)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	fc.watch(ctx)
	_ = fc.c.SetDeadline(deadline)
	if ctx.Err() != nil { // done before the deadline was set: the watcher's cut may be lost
		_ = fc.c.SetDeadline(time.Unix(1, 0))
	}
	res := f.roundTrip(ctx, fc, id)
	if ctx.Err() != nil && fc.c != nil { // the deadline was cut: the connection may hold half an answer
		fc.close()
	}
	return res
}

// watch makes ctx's end cut the connection's deadline. The engine hands a
// VU the same context for many iterations, so the registration is kept
// while the context stays the same.
func (fc *fastConn) watch(ctx context.Context) {
	if ctx == fc.watched || ctx.Done() == nil {
		return
	}
	if fc.unwatch != nil {
		fc.unwatch()
	}
	fc.watched = ctx
	fc.unwatch = context.AfterFunc(ctx, func() {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		if fc.live != nil {
			_ = fc.live.SetDeadline(time.Unix(1, 0))
		}
	})
}

func (f *fastMCP) roundTrip(ctx context.Context, fc *fastConn, id int64) Result {
	b := append(fc.req[:0], f.head...)
	if !f.mcp {
		b = strconv.AppendInt(b, int64(len(f.body)), 10)
		b = append(b, "\r\n\r\n"...)
		b = append(b, f.body...)
		fc.req = b
		return f.send(ctx, fc, b, 0)
	}
	bodyLen := len(`{"jsonrpc":"2.0","id":`) + digits(id) + len(`,"method":"tools/call","params":`) + len(f.params) + 1
	b = strconv.AppendInt(b, int64(bodyLen), 10)
	b = append(b, "\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":"...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":`...)
	b = append(b, f.params...)
	b = append(b, '}')
	fc.req = b
	return f.send(ctx, fc, b, id)
}

func (f *fastMCP) send(ctx context.Context, fc *fastConn, b []byte, id int64) Result {
	if _, err := fc.c.Write(b); err != nil {
		fc.close()
		return failed(ctx, ClassTransport, 0, err.Error())
	}
	res, err := f.readResponse(ctx, fc, id)
	if err != nil {
		fc.close()
		switch {
		case errors.Is(err, errFastProtocol):
			return Result{Class: ClassBadResponse, Status: res.Status, Err: err.Error()}
		case res.Status != 0: // the answer began: as MCPToolCall, a cut body is a bad response
			return failed(ctx, ClassBadResponse, res.Status, "truncated body: "+err.Error())
		}
		return failed(ctx, ClassTransport, 0, err.Error())
	}
	return res
}

func digits(n int64) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// readResponse reads one response. An error means the connection is no
// longer usable; res.Status is set when the status line was read.
func (f *fastMCP) readResponse(ctx context.Context, fc *fastConn, id int64) (Result, error) {
	br := fc.br
	line, err := br.ReadSlice('\n')
	if err != nil {
		return Result{}, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return Result{}, errFastProtocol
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return Result{}, errFastProtocol
	}
	contentLength := int64(-1)
	chunked, closeAfter := false, line[7] == '0'
	var retryAfter, date, location string
	sse := false
	for i := 0; ; i++ { // bounded: at most 100 header lines
		if i > 100 {
			return Result{Status: code}, errFastProtocol
		}
		h, err := br.ReadSlice('\n')
		if err != nil {
			return Result{Status: code}, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, val, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return Result{Status: code}, errFastProtocol
		}
		val = bytes.TrimSpace(val)
		switch {
		case headerIs(name, "content-length"):
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil || n < 0 {
				return Result{Status: code}, errFastProtocol
			}
			contentLength = n
		case headerIs(name, "transfer-encoding"):
			chunked = bytes.EqualFold(val, []byte("chunked"))
		case headerIs(name, "connection"):
			closeAfter = closeAfter || bytes.EqualFold(val, []byte("close"))
		case headerIs(name, "content-type"):
			sse = len(val) >= 17 && bytes.EqualFold(val[:17], []byte("text/event-stream"))
		case headerIs(name, "retry-after"):
			retryAfter = string(val)
		case headerIs(name, "date"):
			date = string(val)
		case headerIs(name, "location"):
			location = string(val)
		}
	}
	body := []byte{}
	if code != http.StatusNoContent && code != http.StatusNotModified { // those two never have a body
		if body, err = fc.readBody(contentLength, chunked, closeAfter); err != nil {
			return Result{Status: code}, err
		}
	}
	if closeAfter {
		fc.close()
	}
	status := ""
	if code < 200 || code > 299 {
		status = strconv.Itoa(code) + " " + http.StatusText(code)
	}
	switch {
	case code >= 200 && code <= 299:
	case code == http.StatusTooManyRequests:
		return Result{Class: Class429, Status: code, Err: status, RetryAfter: parseRetryAfter(retryAfter, date, time.Now())}, nil
	case code >= 400 && code <= 499:
		return Result{Class: Class4xx, Status: code, Err: f.reason(status, body)}, nil
	case code >= 500 && code <= 599:
		return Result{Class: Class5xx, Status: code, Err: f.reason(status, body), RetryAfter: parseRetryAfter(retryAfter, date, time.Now())}, nil
	case code >= 300 && code <= 399:
		return Result{Class: ClassBadResponse, Status: code, Err: fmt.Sprintf("redirect %s to %q not followed", status, location)}, nil
	default:
		return Result{Class: ClassBadResponse, Status: code, Err: "unexpected status " + status}, nil
	}
	if body == nil {
		return Result{Class: ClassBadResponse, Status: code, Err: fmt.Sprintf("body over %d bytes", MaxResponseBytes)}, nil
	}
	if !f.mcp {
		return Result{Class: ClassOK, Status: code}, nil
	}
	var res Result
	if sse {
		res = classifyStream(ctx, code, bufio.NewReader(bytes.NewReader(body)), id)
	} else {
		res = classifyJSONRPCFast(body, id)
	}
	res.Status = code
	return res, nil
}

func headerIs(name []byte, want string) bool {
	return len(name) == len(want) && bytes.EqualFold(name, []byte(want))
}

// readBody reads the body into fc.buf. A body over MaxResponseBytes
// returns nil and an error-free close of the connection.
func (fc *fastConn) readBody(n int64, chunked, closeAfter bool) ([]byte, error) {
	br := fc.br
	b := fc.buf[:0]
	switch {
	case chunked:
		for i := 0; ; i++ { // bounded by MaxResponseBytes: every chunk adds at least one byte
			line, err := br.ReadSlice('\n')
			if err != nil {
				return nil, err
			}
			line = bytes.TrimRight(line, "\r\n")
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if err != nil || size < 0 {
				return nil, errFastProtocol
			}
			if size == 0 {
				for k := 0; k < 100; k++ { // trailers, bounded
					t, err := br.ReadSlice('\n')
					if err != nil {
						return nil, err
					}
					if len(bytes.TrimRight(t, "\r\n")) == 0 {
						break
					}
				}
				break
			}
			if int64(len(b))+size > MaxResponseBytes {
				fc.close()
				return nil, nil
			}
			b = grow(b, int(size))
			if _, err := io.ReadFull(br, b[len(b)-int(size):]); err != nil {
				return nil, err
			}
			if _, err := br.Discard(2); err != nil { // CRLF after the chunk
				return nil, err
			}
		}
	case n >= 0:
		if n > MaxResponseBytes {
			fc.close()
			return nil, nil
		}
		b = grow(b, int(n))
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
	case closeAfter:
		data, err := io.ReadAll(io.LimitReader(br, MaxResponseBytes+1))
		if err != nil {
			return nil, err
		}
		if len(data) > MaxResponseBytes {
			return nil, nil
		}
		b = append(b, data...)
	default: // no length on a keep-alive connection: not valid HTTP/1.1 for a body
		return nil, errFastProtocol
	}
	fc.buf = b
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n+512)) // doubling: linear in the body
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// classifyJSONRPCFast classifies the common answer, {"jsonrpc":"2.0",
// "id":N,"result":{...}} with no "isError":true and no "error", by
// scanning, and hands everything else to classifyJSONRPC. The scan
// accepts only what classifyJSONRPC would call ok: it checks the body is
// valid JSON, the version, the id, and that result is an object.
func classifyJSONRPCFast(data []byte, id int64) Result {
	if okFast(data, id) {
		return Result{Class: ClassOK}
	}
	return classifyJSONRPC(data, id)
}

func okFast(data []byte, id int64) bool {
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' || !json.Valid(d) {
		return false
	}
	if bytes.Contains(d, []byte(`"error"`)) || bytes.Contains(d, []byte(`isError`)) || bytes.Contains(d, []byte(`"method"`)) ||
		!bytes.Contains(d, []byte(`"jsonrpc":"2.0"`)) {
		return false
	}
	var idb [32]byte
	want := strconv.AppendInt(append(idb[:0], `"id":`...), id, 10)
	i := bytes.Index(d, want)
	if i < 0 || bytes.Count(d, []byte(`"id"`)) != 1 || !topLevel(d, i) {
		return false
	}
	if j := i + len(want); j >= len(d) || (d[j] != ',' && d[j] != '}') {
		return false
	}
	r := bytes.Index(d, []byte(`"result":{`))
	return r > 0 && bytes.Count(d, []byte(`"result"`)) == 1 && topLevel(d, r)
}

// topLevel reports whether offset pos of the JSON object d is at depth 1
// (a key of the outer object) and outside any string.
func topLevel(d []byte, pos int) bool {
	depth, inStr, esc := 0, false, false
	for _, c := range d[:pos] {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth == 1 && !inStr
}

// validHeader rejects names that are not HTTP tokens and values with
// control characters (CR, LF, NUL...), which would split the request.
func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	for _, c := range []byte(value) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// reason is an HTTP error's Result.Err: for MCP calls, as MCPToolCall
// gives it (withRPCMessage); else the status line.
func (f *fastMCP) reason(status string, body []byte) string {
	if !f.mcp {
		return status
	}
	return withRPCMessage(status, body)
}
