package buildinfo

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct{ version, commit, want string }{
		{"bc3a900", "bc3a900", "bc3a900"},             // git describe --always on an untagged tree
		{"bc3a900-dirty", "bc3a900", "bc3a900-dirty"}, // the commit once, not twice
		{"v0.3.0-2-gbc3a900", "bc3a900", "v0.3.0-2-gbc3a900"},
		{"v0.3.0", "bc3a900", "v0.3.0 (commit bc3a900)"},
	} {
		if got := String(tc.version, tc.commit); got != tc.want {
			t.Errorf("String(%q, %q) = %q, want %q", tc.version, tc.commit, got, tc.want)
		}
	}
	if got := String("", ""); got != "dev" && got[:4] != "dev " {
		t.Errorf("no version: %q", got)
	}
}
