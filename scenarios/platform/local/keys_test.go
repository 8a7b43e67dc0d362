package local_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKeysNeverLogged drives every console endpoint with every key of the
// run, a key nobody has, and malformed Authorization headers, sends MCP
// calls carrying a key through the edge, tears the platform down, and greps
// every log it produced (console, edge, workers, the fleet's) for the key
// strings.
func TestKeysNeverLogged(t *testing.T) {
	t.Parallel()
	r := upLocal(t, nil)
	const zone = "keys"
	r.createZone(zone, 1, 2)
	r.waitReady(zone, 1, 30*time.Second)
	keys := []string{"sa_" + strings.Repeat("5", 32)} // a key nobody has
	for _, k := range r.ep.Keys.All() {
		keys = append(keys, k.Key)
	}
	type req struct{ method, path, body string }
	reqs := []req{
		{"GET", "/api/v1/groups/g/zones/keys/workers", ""},
		{"PUT", "/api/v1/groups/g/zones/keys/workers", `{"max_count": 2}`},
		{"PUT", "/api/v1/groups/g/zones/keys/workers", `{"count": 5}`}, // 422 for admins, 403 for the others
		{"PUT", "/api/v1/groups/g/zones/keys/workers", `{"count": `},   // 400
		{"POST", "/api/v1/groups/g/zones/keys/rebalance", ""},
		{"POST", "/api/v1/groups/g/zones/nope/rebalance", ""},              // 404
		{"PUT", "/api/v1/config/autorebalance", `{"interval_seconds": 0}`}, // 422 or 403
		{"GET", "/api/v1/audit?limit=5", ""},
		{"DELETE", "/api/v1/audit", ""}, // 405
	}
	statuses := map[int]int{}
	for _, k := range keys {
		for _, auth := range []string{"Bearer " + k, "bearer " + k, "Basic " + k, k, "Bearer " + k + " extra", "Bearer  " + k} {
			for _, q := range reqs {
				hreq, _ := http.NewRequestWithContext(ctxFor(t, 10*time.Second), q.method, r.ep.ConsoleURL+q.path, strings.NewReader(q.body))
				hreq.Header.Set("Authorization", auth)
				resp, err := r.hc.Do(hreq)
				if err != nil {
					t.Fatalf("%s %s: %v", q.method, q.path, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[resp.StatusCode]++
				if resp.StatusCode >= 500 {
					t.Errorf("%s %s with %q: %d", q.method, q.path, strings.Replace(auth, k, "KEY", 1), resp.StatusCode)
				}
			}
		}
		// An MCP call through the edge carrying the key (forwarded to the
		// worker). The fleet has the worker ready; the edge routes to it from
		// its next discovery refresh on, so a 503 (no ready worker yet) is
		// tried again, bounded, until the edge has it.
		status := 0
		for deadline := time.Now().Add(15 * time.Second); ; {
			hreq, _ := http.NewRequestWithContext(ctxFor(t, 10*time.Second), http.MethodPost, r.ep.EdgeURL+"/g/g/z/"+zone+"/mcp",
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":1}}}`))
			hreq.Header.Set("Content-Type", "application/json")
			hreq.Header.Set("Accept", "application/json, text/event-stream")
			hreq.Header.Set("Authorization", "Bearer "+k)
			resp, err := r.hc.Do(hreq)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			status = resp.StatusCode
			if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
				break
			}
			<-time.After(100 * time.Millisecond) // at most 150 tries
		}
		if status != http.StatusOK {
			t.Errorf("MCP call with a key: %d", status)
		}
	}
	t.Logf("console answers: %v", statuses)
	if err := r.down(); err != nil {
		t.Errorf("down: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(r.work, "logs", "*"))
	files = append(files, filepath.Join(r.work, "harness.log"))
	scanned := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scanned += len(b)
		for _, k := range keys {
			if bytes.Contains(b, []byte(k)) {
				t.Errorf("%s holds the key %s…", filepath.Base(f), k[:4])
			}
		}
	}
	t.Logf("%d keys not found in %d log files (%d bytes)", len(keys), len(files), scanned)
	if scanned == 0 {
		t.Error("no log to scan")
	}
}

// TestSlowClientsAreCutOff: a client that sends its request headers a
// little at a time, never finishing them, is disconnected by the console,
// the edge and a worker within their ReadHeaderTimeout (5 s).
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	r := upLocal(t, nil)
	r.createZone("slow", 1, 1)
	eps := r.waitReady("slow", 1, 30*time.Second)
	servers := map[string]string{
		"console": strings.TrimPrefix(r.ep.ConsoleURL, "http://"),
		"edge":    strings.TrimPrefix(r.ep.EdgeURL, "http://"),
		"worker":  eps[0].Addr,
	}
	var wg sync.WaitGroup
	for name, addr := range servers {
		wg.Go(func() {
			took, answer, err := slowHeaders(addr, 15*time.Second)
			t.Logf("%s: cut off after %.1fs (answer %q, %v)", name, took.Seconds(), answer, err)
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else if took < 4*time.Second || took > 8*time.Second {
				t.Errorf("%s: connection ended after %s, want about 5 s (ReadHeaderTimeout)", name, took)
			}
			if strings.Contains(answer, " 200 ") {
				t.Errorf("%s served a request whose headers never ended: %q", name, answer)
			}
		})
	}
	wg.Wait()
}

// slowHeaders opens a connection to addr and sends a request line and then
// one header line every 300 ms, never the blank line that ends the headers,
// until the server closes the connection or limit passes. It returns how
// long the server kept the connection and what it answered.
func slowHeaders(addr string, limit time.Duration) (time.Duration, string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "GET /livez HTTP/1.1\r\nHost: slow\r\n"); err != nil {
		return 0, "", err
	}
	done := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		tick := time.NewTicker(300 * time.Millisecond) // the slow client's pace
		defer tick.Stop()
		for i := 0; i < int(limit/(300*time.Millisecond)); i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := fmt.Fprintf(conn, "X-Slow-%d: a\r\n", i); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(conn)
	took := time.Since(start)
	close(done)
	<-writer
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return took, string(b), fmt.Errorf("still connected after %s", limit)
	}
	return took, firstLine(string(b)), nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}
