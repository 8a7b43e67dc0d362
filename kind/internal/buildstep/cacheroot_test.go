package buildstep

import (
	"runtime"
	"testing"

	"github.com/scaleproof/scaleproof/internal/skips"
)

func TestCacheRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		skips.Skip(t, "XDG_CACHE_HOME names the user cache dir on Linux")
	}
	for _, tc := range []struct{ xdg, want string }{
		{"/x/cache", "/x/cache/scaleproof"},
		{"/y", "/y/scaleproof"},
	} {
		t.Setenv("XDG_CACHE_HOME", tc.xdg)
		if got := CacheRoot(); got != tc.want {
			t.Errorf("XDG_CACHE_HOME=%s: %s, want %s", tc.xdg, got, tc.want)
		}
	}
}
