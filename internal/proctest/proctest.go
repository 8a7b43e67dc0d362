// Package proctest finds processes through /proc, for tests that check a
// harness or platform left no process behind (no orphans after Ctrl-C,
// teardown, or a failed start). Linux only; test code only.
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Of lists live (not zombie) processes, read from /proc, whose argv[0]
// is bin (when bin is not empty) and whose stderr is a file under dir (when
// dir is not empty: every reference process logs to WorkDir/logs).
func Of(bin, dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		stat, err := os.ReadFile(filepath.Join(base, "stat"))
		if err != nil {
			continue // gone
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		if bin != "" {
			cmdline, err := os.ReadFile(filepath.Join(base, "cmdline"))
			if err != nil {
				continue
			}
			argv0, _, _ := bytes.Cut(cmdline, []byte{0})
			if string(argv0) != bin {
				continue
			}
		}
		if dir != "" {
			target, err := os.Readlink(filepath.Join(base, "fd", "2"))
			if err != nil || !strings.HasPrefix(target, dir+string(filepath.Separator)) {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// WaitNone polls list every 50 ms until it is empty or timeout passes,
// and returns what is left.
func WaitNone(list func() []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		pids := list()
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(50 * time.Millisecond) // polling /proc: there is no event for another process's exit
	}
}
