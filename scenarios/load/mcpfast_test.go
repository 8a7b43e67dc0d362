package load

import "testing"

// TestOKFastAgrees: the scan says ok only where the full parse says ok.
func TestOKFastAgrees(t *testing.T) {
	bodies := []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"worked 0 ms on w1"}]}}`,
		` {"result":{"content":[]},"id":7,"jsonrpc":"2.0"} `,
		`{"jsonrpc":"2.0","id":8,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":77,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"isError":true}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"isError" : true}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"x":{"result":{}}}`,
		`{"jsonrpc":"2.0","x":{"id":7},"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}`,
		`{"jsonrpc":"1.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{},"result":{"isError":true}}`,
		`{"jsonrpc":"2.0","id":7,"method":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"text":"\"id\":7 \"result\":{"}}`,
		`{"x":"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}","jsonrpc":"2.0"}`,
	}
	for _, b := range bodies {
		fast, full := classifyJSONRPCFast([]byte(b), 7), classifyJSONRPC([]byte(b), 7)
		if fast.Class != full.Class {
			t.Errorf("%s: fast %s, full %s (%s)", b, fast.Class, full.Class, full.Err)
		}
		if okFast([]byte(b), 7) && full.Class != ClassOK {
			t.Errorf("%s: the scan says ok, the parse says %s", b, full.Class)
		}
	}
	if !okFast([]byte(bodies[0]), 7) || !okFast([]byte(bodies[1]), 7) {
		t.Error("the scan misses the common answer: no fast path")
	}
}

func TestFastRejects(t *testing.T) {
	cases := []struct {
		name, url string
		h         map[string][]string
	}{
		{"https", "https://127.0.0.1:1/mcp", nil},
		{"not a URL", "::", nil},
		{"no host", "http:///mcp", nil},
		{"CRLF in a value", "http://127.0.0.1:1/mcp", map[string][]string{"X-A": {"b\r\nX-Injected: 1"}}},
		{"space in a name", "http://127.0.0.1:1/mcp", map[string][]string{"X A": {"b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := MCPToolCallFast(tc.url, "x", nil, tc.h, FastOptions{}); err == nil {
				t.Errorf("accepted %q %v", tc.url, tc.h)
			}
		})
	}
	if _, err := MCPToolCallFast("http://127.0.0.1:1/mcp", "x", nil, map[string][]string{"Authorization": {"Bearer k\t1"}}, FastOptions{}); err != nil {
		t.Errorf("valid header rejected: %v", err)
	}
}
