package local

import (
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/scaleproof/scaleproof/autoscaler/promserver"
)

// fileSD keeps Prometheus' file_sd file in step with the local system: one
// target group per worker (labels component=worker, group, zone, worker)
// and one each for the console and the edge. Every change rewrites the
// whole file atomically.
type fileSD struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	workers []promserver.TargetGroup
	extras  map[string]promserver.TargetGroup
}

func newFileSD(path string, log *slog.Logger) *fileSD {
	return &fileSD{path: path, log: log, extras: map[string]promserver.TargetGroup{}}
}

// setWorkers replaces the worker targets and rewrites the file.
func (s *fileSD) setWorkers(groups []promserver.TargetGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers = groups
	if err := s.writeLocked(); err != nil {
		s.log.Warn("prometheus targets", "err", err)
	}
}

// setExtra sets a named non-worker target group and rewrites the file.
func (s *fileSD) setExtra(name string, g promserver.TargetGroup) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extras[name] = g
	return s.writeLocked()
}

func (s *fileSD) write() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked()
}

func (s *fileSD) writeLocked() error {
	all := slices.Clone(s.workers)
	for _, k := range slices.Sorted(maps.Keys(s.extras)) {
		all = append(all, s.extras[k])
	}
	return promserver.WriteTargets(s.path, all)
}

// SetFileSD makes the fleet rewrite sd's worker targets on every change of
// its workers (started, stopped, replaced).
func (f *Fleet) SetFileSD(sd *fileSD) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sd = sd
	f.sdChangedLocked()
}

// sdChangedLocked pushes the listed workers to the file_sd file. Call with
// f.mu held.
func (f *Fleet) sdChangedLocked() {
	if f.sd == nil {
		return
	}
	var groups []promserver.TargetGroup
	for _, k := range slices.Sorted(maps.Keys(f.zones)) {
		zp := f.zones[k]
		for _, w := range zp.all() {
			labels := map[string]string{"component": "worker", "group": zp.group, "zone": zp.zone, "worker": w.id}
			if w.canary {
				labels["track"] = CanaryVersion
			}
			groups = append(groups, promserver.TargetGroup{Targets: []string{w.p.addr}, Labels: labels})
		}
	}
	f.sd.setWorkers(groups)
}
