package reports

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestVerdictCanaryRoundTrip: a verdict's canary (which worker, its share of
// calls) reads back as written, and a verdict without one has no "canary"
// key (a run without --canary writes what it always wrote).
func TestVerdictCanaryRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	w, err := Create(path, RunMeta{RunID: "r", Platform: "local", Profile: "quick", Started: time.Unix(0, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	c := &Canary{Workers: []string{"g-a-canary3"}, Calls: 1085, Total: 3179, Share: 1085.0 / 3179, Refused: 2}
	for _, v := range []Verdict{{Scenario: "sustained", Passed: true, Canary: c}, {Scenario: "max-1", Passed: true}} {
		if err := w.Write(KindVerdict, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(End{Ended: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	r, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Verdicts) != 2 || !reflect.DeepEqual(r.Verdicts[0].Canary, c) || r.Verdicts[1].Canary != nil {
		t.Fatalf("verdicts read back %+v, want the canary %+v on the first only", r.Verdicts, c)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"max-1"`) && strings.Contains(line, `"canary"`) {
			t.Fatalf("a verdict without a canary writes one: %s", line)
		}
	}
}
