package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/internal/proctest"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// TestUpRunsUntilInterrupted: `scaleproof up` brings the reference system
// up, prints the console's and the edge's URLs and the keys, serves the API
// with those keys until SIGINT, then tears everything down and exits 0 with
// the complete logs in the artifacts folder.
func TestUpRunsUntilInterrupted(t *testing.T) {
	if builtHarness == "" {
		t.Skip("runs the harness as a process; skipped in -short mode")
	}
	art := filepath.Join(t.TempDir(), "artifacts")
	cmd := exec.Command(builtHarness, "up", "--ref-bin", builtRef, "--artifacts", art, "--prometheus", "off")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
		close(exited)
	}()

	var consoleURL, edgeURL, gaKey, keysFile string
	url := regexp.MustCompile(`^(console|edge)\s+(http://127\.0\.0\.1:\d+)`)
	key := regexp.MustCompile(`^group_admin of scaleproof\s+\S+\s+(ga_[0-9a-f]+)$`)
	kf := regexp.MustCompile(`^keys file\s+(\S+)\s+\(mode 0600\)$`)
	timeout := time.After(time.Minute)
	for consoleURL == "" || edgeURL == "" || gaKey == "" || keysFile == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("up ended before printing URLs and keys; stderr:\n%s", stderr.String())
			}
			if m := url.FindStringSubmatch(l); m != nil {
				if m[1] == "console" {
					consoleURL = m[2]
				} else {
					edgeURL = m[2]
				}
			}
			if m := key.FindStringSubmatch(l); m != nil {
				gaKey = m[1]
			}
			if m := kf.FindStringSubmatch(l); m != nil {
				keysFile = m[1]
			}
		case <-timeout:
			t.Fatalf("no URLs and keys within a minute; stderr:\n%s", stderr.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc := consoleclient.New(consoleURL, 10*time.Second)
	three := 3
	if st, err := cc.PutZone(ctx, gaKey, "scaleproof", "a", consoleclient.Update{MaxCount: &three}); err != nil || st != http.StatusOK {
		t.Fatalf("PUT with the printed group-admin key: HTTP %d %v", st, err)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(edgeURL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("edge /readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	// The keys file is private (0600 in a 0700 folder) and never under the
	// artifacts, which are made to be shared.
	if st, err := os.Stat(keysFile); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("keys file mode %v, want 0600", st.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Dir(keysFile)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("keys folder %s: %v %v, want mode 0700", filepath.Dir(keysFile), st, err)
	}
	if rel, err := filepath.Rel(art, keysFile); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("keys file %s is under the artifacts %s", keysFile, art)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines { // drain
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("up after SIGINT: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatal("up did not exit within 90 s of SIGINT")
	}
	if _, err := os.Stat(filepath.Dir(keysFile)); !os.IsNotExist(err) {
		t.Errorf("the keys folder %s is still there after the teardown (%v)", filepath.Dir(keysFile), err)
	}
	for _, f := range secretsUnder(t, art) {
		t.Errorf("a secret under the artifacts folder: %s", f)
	}
	if left := proctest.WaitNone(func() []int { return proctest.Of(builtRef, art) }, 10*time.Second); len(left) > 0 {
		t.Errorf("scaleproof-ref processes left after up: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(art, "logs", "console.log")); err != nil || len(b) == 0 {
		t.Errorf("logs/console.log after up: %v", err)
	}
}
