package nodeimage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// preload imports the component images archive into the node's containerd
// store (root = <node>/var/lib/containerd) with a bare containerd that runs
// only for this: kind's own `kind build node-image` would fetch etcd,
// CoreDNS and pause from a registry, which cannot be reached. Every tag is
// pinned, and `ctr images check` must show each complete.
func preload(sc *stepCtx, containerdBin, ctrBin, root, archive string, tags []string) error {
	state, err := os.MkdirTemp("", "sp-preload-") // short: a unix socket path must fit 108 bytes
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	sock := filepath.Join(state, "c.sock")
	tmpl, err := assets.ReadFile("files/preload-containerd.toml")
	if err != nil {
		return err
	}
	cfg := strings.NewReplacer("@ROOT@", root, "@STATE@", filepath.Join(state, "state"), "@SOCK@", sock).Replace(string(tmpl))
	cfgPath := filepath.Join(state, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o711); err != nil {
		return err
	}
	cd := exec.Command(containerdBin, "--config", cfgPath)
	cd.Stdout, cd.Stderr = sc.Log, sc.Log
	cd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(sc.Log, "$ %s --config %s &\n", containerdBin, cfgPath)
	if err := cd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cd.Wait() }()
	defer func() {
		_ = cd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cd.Process.Kill()
			<-exited
		}
	}()
	// bounded wait for the socket: 30 s at most
	ready := false
	for i := 0; i < 150 && !ready; i++ {
		select {
		case err := <-exited:
			return fmt.Errorf("containerd exited before it served: %v", err)
		case <-sc.Done():
			return sc.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := os.Stat(sock); err == nil {
			ready = exec.Command(ctrBin, "-a", sock, "version").Run() == nil
		}
	}
	if !ready {
		return fmt.Errorf("containerd did not serve %s within 30 s", sock)
	}
	ctr := func(args ...string) (string, error) {
		return sc.Output("", nil, ctrBin, append([]string{"-a", sock, "-n", "k8s.io"}, args...)...)
	}
	if _, err := ctr("images", "import", "--no-unpack", "--all-platforms", "--digests",
		"--label=io.cri-containerd.pinned=pinned", archive); err != nil {
		return err
	}
	out, err := ctr("images", "check")
	if err != nil {
		return err
	}
	return checkComplete(out, tags)
}

// checkComplete fails unless `ctr images check` output lists every tag as
// complete.
func checkComplete(out string, tags []string) error {
	status := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 {
			status[f[0]] = f[3]
		}
	}
	var bad []string
	for _, t := range tags {
		if status[t] != "complete" {
			bad = append(bad, fmt.Sprintf("%s (%q)", t, status[t]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("preloaded images not complete: %s", strings.Join(bad, ", "))
	}
	return nil
}
