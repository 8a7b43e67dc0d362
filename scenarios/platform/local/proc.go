package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// proc is one child process of the reference system (console, edge or worker).
type proc struct {
	name    string
	cmd     *exec.Cmd
	addr    string // host:port from the announce line
	created time.Time
	done    chan struct{} // closed when the process has exited
	exitErr error
	logf    *os.File
}

// startProc starts bin with args, its stderr (and the rest of stdout) going to
// logDir/name.log, and waits up to timeout for the announce line. The child
// is in its own process group (a terminal Ctrl-C reaches the harness only,
// which tears down in order) and gets SIGKILL if the harness dies.
func startProc(ctx context.Context, bin, logDir, name string, args []string, env []string, timeout time.Duration) (*proc, error) {
	logf, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: log file: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, created: time.Now(), done: make(chan struct{}), logf: logf}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			if !announced && strings.HasPrefix(line, serve.AnnouncePrefix) {
				announced = true
				addrc <- strings.TrimPrefix(strings.TrimPrefix(line, serve.AnnouncePrefix), "http://")
				continue
			}
			fmt.Fprintln(logf, line)
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		p.exitErr = cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-addrc:
		p.addr = a
		return p, nil
	case <-p.done:
		logf.Close()
		return nil, fmt.Errorf("start %s: exited before listening (%v); see %s", name, p.exitErr, logf.Name())
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("start %s: no announce line within %s; see %s", name, timeout, logf.Name())
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("start %s: %w", name, ctx.Err())
	}
}

// stop sends SIGTERM and waits up to grace for the drain, then SIGKILL.
func (p *proc) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s did not stop within %s: killed", p.name, grace)
	}
	p.logf.Close()
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return fmt.Errorf("%s exited: %v", p.name, ee)
	}
	return nil
}

// kill sends SIGKILL and waits (bounded) for the exit.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// signal sends sig (SIGSTOP/SIGCONT for fault tests).
func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }
