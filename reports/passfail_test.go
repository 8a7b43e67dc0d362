package reports

import "testing"

func TestPassFail(t *testing.T) {
	for _, tc := range []struct {
		ok   bool
		want string
	}{{true, "PASS"}, {false, "FAIL"}} {
		if got := PassFail(tc.ok); got != tc.want {
			t.Errorf("PassFail(%t) = %q, want %q", tc.ok, got, tc.want)
		}
	}
}
