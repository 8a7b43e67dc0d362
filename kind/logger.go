package kind

import (
	"archive/tar"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	kindlog "sigs.k8s.io/kind/pkg/log"
)

// kindLogger sends kind's own log lines to the run's log.
type kindLogger struct{ log *slog.Logger }

func (l kindLogger) Warn(m string) { l.log.Warn(m, "part", "kind") }
func (l kindLogger) Warnf(f string, a ...interface{}) {
	l.log.Warn(fmt.Sprintf(f, a...), "part", "kind")
}
func (l kindLogger) Error(m string) { l.log.Error(m, "part", "kind") }
func (l kindLogger) Errorf(f string, a ...interface{}) {
	l.log.Error(fmt.Sprintf(f, a...), "part", "kind")
}
func (l kindLogger) V(lv kindlog.Level) kindlog.InfoLogger {
	return kindInfo{log: l.log, on: lv <= 1}
}

type kindInfo struct {
	log *slog.Logger
	on  bool
}

func (l kindInfo) Info(m string) {
	if l.on {
		l.log.Info(m, "part", "kind")
	}
}
func (l kindInfo) Infof(f string, a ...interface{}) {
	if l.on {
		l.log.Info(fmt.Sprintf(f, a...), "part", "kind")
	}
}
func (l kindInfo) Enabled() bool { return l.on }

// writeSingleFileTar writes a tar holding src as name (mode 0755, owner 0).
func writeSingleFileTar(path, name, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: st.Size(), ModTime: time.Unix(0, 0)}); err != nil {
		f.Close()
		return err
	}
	if _, err := io.Copy(tw, in); err != nil {
		f.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
