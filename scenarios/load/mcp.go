package load

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// MaxResponseBytes bounds how much of an answer MCPToolCall reads; a longer
// answer is a bad_response.
const MaxResponseBytes = 4 << 20

// MCPToolCall returns an Exec that posts one JSON-RPC 2.0 "tools/call"
// request per iteration to url:
//
//	{"jsonrpc":"2.0","id":<n>,"method":"tools/call","params":{"name":tool,"arguments":args}}
//
// with header (copied at construction; Mcp-Session-Id, Authorization...)
// and then Content-Type: application/json and Accept: application/json,
// text/event-stream. Ids count from 1 per Exec. args are encoded once, at
// construction; nil encodes as {}. hc is copied (nil means
// http.DefaultClient) so that redirects are not followed; its Transport and
// Timeout are used as they are.
//
// Classification, exactly one class per call:
//   - no response: transport (interrupted if ctx was done);
//   - 429: "429", RetryAfter from Retry-After (delta-seconds, or an HTTP
//     date relative to the response's Date header, else to time.Now);
//   - other 4xx: "4xx"; 5xx: "5xx" (with RetryAfter when the answer has
//     Retry-After, e.g. an edge's 503 while no worker is ready); 3xx and
//     other non-2xx: bad_response;
//   - 2xx whose body (application/json, or the first JSON-RPC response of a
//     text/event-stream) is a JSON-RPC 2.0 response with our id: an "error"
//     object or a result with isError true is jsonrpc_error, an object
//     result is ok;
//   - anything else (non-JSON, truncated, over MaxResponseBytes, wrong id,
//     missing result, stream ended without the response): bad_response;
//   - ctx done while reading the answer: interrupted.
func MCPToolCall(hc *http.Client, url string, tool string, args map[string]any, header http.Header) Exec {
	client := noRedirects(hc)
	if args == nil {
		args = map[string]any{}
	}
	params, perr := json.Marshal(struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}{tool, args})
	hdr := header.Clone()
	var ids atomic.Int64
	return func(ctx context.Context, _ int, _ int64) Result {
		if perr != nil {
			return Result{Class: ClassTransport, Err: "load: encode tools/call params: " + perr.Error()}
		}
		id := ids.Add(1)
		body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return Result{Class: ClassTransport, Err: "load: build request: " + err.Error()}
		}
		for k, v := range hdr {
			req.Header[k] = append([]string(nil), v...)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			return failed(ctx, ClassTransport, 0, err.Error())
		}
		defer resp.Body.Close()
		return classifyResponse(ctx, resp, id)
	}
}

// noRedirects is a copy of hc (http.DefaultClient when nil) that does not follow redirects.
func noRedirects(hc *http.Client) *http.Client {
	client := *cmp.Or(hc, http.DefaultClient)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client
}

// failed is a result of class c, or interrupted when ctx is done.
func failed(ctx context.Context, c Class, status int, msg string) Result {
	if ctx.Err() != nil {
		return Result{Class: ClassInterrupted, Status: status, Err: context.Cause(ctx).Error()}
	}
	return Result{Class: c, Status: status, Err: msg}
}

func classifyResponse(ctx context.Context, resp *http.Response, id int64) Result {
	code := resp.StatusCode
	switch {
	case code >= 200 && code <= 299:
	case code == http.StatusTooManyRequests:
		discard(resp.Body)
		return Result{Class: Class429, Status: code, Err: resp.Status,
			RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), resp.Header.Get("Date"), time.Now())}
	case code >= 400 && code <= 499:
		return Result{Class: Class4xx, Status: code, Err: errorReason(resp)}
	case code >= 500 && code <= 599:
		return Result{Class: Class5xx, Status: code, Err: errorReason(resp),
			RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), resp.Header.Get("Date"), time.Now())}
	case code >= 300 && code <= 399:
		discard(resp.Body)
		return Result{Class: ClassBadResponse, Status: code,
			Err: fmt.Sprintf("redirect %s to %q not followed", resp.Status, resp.Header.Get("Location"))}
	default:
		discard(resp.Body)
		return Result{Class: ClassBadResponse, Status: code, Err: "unexpected status " + resp.Status}
	}

	body := io.LimitReader(resp.Body, MaxResponseBytes+1)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return classifyStream(ctx, code, bufio.NewReader(body), id)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return failed(ctx, ClassBadResponse, code, "truncated body: "+err.Error())
	}
	if len(data) > MaxResponseBytes {
		return Result{Class: ClassBadResponse, Status: code, Err: fmt.Sprintf("body over %d bytes", MaxResponseBytes)}
	}
	res := classifyJSONRPC(data, id)
	res.Status = code
	return res
}

// classifyStream reads server-sent events until the first JSON-RPC message
// that is not a server request or notification, and classifies it.
func classifyStream(ctx context.Context, code int, br *bufio.Reader, id int64) Result {
	var data bytes.Buffer
	event, read := "", 0
	for { // bounded: the reader stops after MaxResponseBytes+1 bytes
		line, err := br.ReadBytes('\n')
		read += len(line)
		if err != nil {
			switch {
			case !errors.Is(err, io.EOF):
				return failed(ctx, ClassBadResponse, code, "truncated event stream: "+err.Error())
			case ctx.Err() != nil:
				return failed(ctx, ClassBadResponse, code, "")
			case read > MaxResponseBytes:
				return Result{Class: ClassBadResponse, Status: code, Err: fmt.Sprintf("event stream over %d bytes", MaxResponseBytes)}
			case len(line) > 0 || data.Len() > 0:
				return Result{Class: ClassBadResponse, Status: code, Err: "event stream truncated"}
			}
			return Result{Class: ClassBadResponse, Status: code, Err: "event stream ended without a response"}
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(value)
			case "event":
				event = string(value)
			}
			continue
		}
		// A blank line dispatches the event.
		if data.Len() > 0 && (event == "" || event == "message") && !isServerMessage(data.Bytes()) {
			res := classifyJSONRPC(data.Bytes(), id)
			res.Status = code
			return res
		}
		data.Reset()
		event = ""
	}
}

// isServerMessage reports whether data is a JSON-RPC request or
// notification (it has a method), which may precede the response.
func isServerMessage(data []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method != ""
}

// classifyJSONRPC classifies one JSON-RPC message meant to answer id.
func classifyJSONRPC(data []byte, id int64) Result {
	bad := func(msg string) Result { return Result{Class: ClassBadResponse, Err: msg} }
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return bad("not a JSON-RPC response: " + shorten(err.Error()))
	}
	if m.JSONRPC != "2.0" {
		return bad(fmt.Sprintf("jsonrpc %q, want \"2.0\"", m.JSONRPC))
	}
	if m.Method != "" {
		return bad("got a request or notification, not a response")
	}
	hasResult := len(m.Result) > 0 && string(m.Result) != "null"
	hasError := len(m.Error) > 0 && string(m.Error) != "null"
	// An error answering a request whose id the server could not read has
	// id null (JSON-RPC 2.0 §5).
	if got := string(bytes.TrimSpace(m.ID)); got != strconv.FormatInt(id, 10) && !(hasError && got == "null") {
		return bad(fmt.Sprintf("response id %s, want %d", shorten(got), id))
	}
	switch {
	case hasResult && hasError:
		return bad("response has both result and error")
	case hasError:
		var e struct {
			Code    *int   `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(m.Error, &e) != nil || e.Code == nil {
			return bad("malformed JSON-RPC error object")
		}
		return Result{Class: ClassJSONRPCError, Err: fmt.Sprintf("JSON-RPC error %d: %s", *e.Code, shorten(e.Message))}
	case !hasResult:
		return bad("response has no result")
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if m.Result[0] != '{' || json.Unmarshal(m.Result, &r) != nil {
		return bad("result is not an object")
	}
	if r.IsError {
		return Result{Class: ClassJSONRPCError, Err: "tool result has isError true"}
	}
	return Result{Class: ClassOK}
}

// parseRetryAfter reads delta-seconds or an HTTP date (RFC 9110 §10.2.3).
// A date counts from the response's Date header when it has one, else from
// now. Absent, malformed or past values are 0.
func parseRetryAfter(v, date string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(MaxDuration/time.Second))) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d, err := http.ParseTime(date); err == nil {
		now = d
	}
	return min(max(t.Sub(now), 0), MaxDuration)
}

// discard reads a little of an unwanted body so the connection can be
// reused.
func discard(r io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(r, 64<<10)) }

// errorReason is an HTTP error's Result.Err: its status line and, when the
// body is a JSON-RPC error (as the MCP servers and proxies in front of them
// answer), that error's message, so that a failed call says which part
// failed and why ("502 Bad Gateway: worker w-2 failed: EOF"). The body is
// read up to 64 KiB, as discard reads it.
func errorReason(resp *http.Response) string {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return withRPCMessage(resp.Status, data)
}

// withRPCMessage is status, then ": " and the message of the JSON-RPC
// error body holds, when it holds one.
func withRPCMessage(status string, body []byte) string {
	var m struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil || m.Error == nil || m.Error.Message == "" {
		return status
	}
	return status + ": " + shorten(m.Error.Message)
}

func shorten(s string) string {
	const n = 120
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
