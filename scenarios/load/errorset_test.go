package load

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMetricsErrors(t *testing.T) {
	r := func(c Class, err string) Result {
		return Result{Start: fakeEpoch, Latency: time.Millisecond, Class: c, Err: err}
	}
	many := make([]Result, 0, MaxErrorReasons+3)
	for i := range MaxErrorReasons + 3 {
		many = append(many, r(ClassTransport, fmt.Sprintf("dial tcp 127.0.0.1:%d: connection refused", 40000+i)))
	}
	tests := []struct {
		name    string
		results []Result
		class   Class
		want    []ErrorCount
	}{
		{name: "ok calls have no reason", results: []Result{r(ClassOK, ""), r(ClassOK, "")}, want: nil},
		{name: "counted by reason, the most frequent first",
			results: []Result{r(Class5xx, "502 Bad Gateway: worker w-2 failed: EOF"), r(Class5xx, "503 Service Unavailable: no ready worker"),
				r(Class5xx, "503 Service Unavailable: no ready worker"), r(Class429, "429 Too Many Requests")},
			class: Class5xx,
			want:  []ErrorCount{{Class5xx, "503 Service Unavailable: no ready worker", 2}, {Class5xx, "502 Bad Gateway: worker w-2 failed: EOF", 1}}},
		{name: "every class, in report order",
			results: []Result{r(ClassTransport, "connection reset"), r(Class429, "429 Too Many Requests"), r(Class5xx, "500 Internal Server Error")},
			want:    []ErrorCount{{Class429, "429 Too Many Requests", 1}, {Class5xx, "500 Internal Server Error", 1}, {ClassTransport, "connection reset", 1}}},
		{name: "a failure without a reason is counted in its class only", results: []Result{r(Class5xx, "")}, class: Class5xx, want: nil},
		{name: "a long reason is cut", results: []Result{r(ClassBadResponse, strings.Repeat("x", 500))}, class: ClassBadResponse,
			want: []ErrorCount{{ClassBadResponse, strings.Repeat("x", maxReasonBytes) + "...", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := recorded(fakeEpoch, tt.results...)
			if got := m.Errors(tt.class); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Errors(%q) = %+v, want %+v", tt.class, got, tt.want)
			}
		})
	}

	t.Run("at most MaxErrorReasons a class; the others still counted in the totals", func(t *testing.T) {
		m := recorded(fakeEpoch, append(many, r(Class5xx, "500 Internal Server Error"))...)
		if got := len(m.Errors(ClassTransport)); got != MaxErrorReasons {
			t.Errorf("%d transport reasons kept, want %d", got, MaxErrorReasons)
		}
		if got := m.Errors(Class5xx); len(got) != 1 {
			t.Errorf("a full class took another's room: 5xx reasons %+v", got)
		}
		if m.Count(ClassTransport) != int64(len(many)) {
			t.Errorf("transport total %d, want %d", m.Count(ClassTransport), len(many))
		}
	})

	t.Run("Merge adds the reasons", func(t *testing.T) {
		a := recorded(fakeEpoch, r(Class5xx, "502 Bad Gateway"), r(ClassTransport, "connection reset"))
		b := recorded(fakeEpoch, r(Class5xx, "502 Bad Gateway"), r(Class5xx, "504 Gateway Timeout"))
		a.Merge(b)
		want := []ErrorCount{{Class5xx, "502 Bad Gateway", 2}, {Class5xx, "504 Gateway Timeout", 1}, {ClassTransport, "connection reset", 1}}
		if got := a.Errors(""); !reflect.DeepEqual(got, want) {
			t.Errorf("merged %+v, want %+v", got, want)
		}
	})
}
