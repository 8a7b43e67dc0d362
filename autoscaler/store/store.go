package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/scaleproof/scaleproof/autoscaler"
)

// Errors a caller can test with errors.Is.
var (
	// ErrNotFound: the zone is not in the store.
	ErrNotFound = errors.New("not found")
	// ErrClosed: the store is closed (or was never opened).
	ErrClosed = errors.New("store closed")
	// ErrConflict: another process changed a zone this write was based on
	// (only a Backend shared by several processes returns it).
	ErrConflict = errors.New("zone changed by another writer")
)

// Defaults of the auto-rebalance scheduler (Ramen 0.7.5 "Who runs it": off by
// default, every 60 s when on).
const DefaultInterval = 60 * time.Second

var (
	bucketZones  = []byte("zones")
	bucketAudit  = []byte("audit")
	bucketConfig = []byte("config")
	keyAutoReb   = []byte("autorebalance")
)

// Zone is the persisted state of one group × zone.
type Zone struct {
	Group      string    `json:"group"`
	Zone       string    `json:"zone"`
	Count      int       `json:"count"`
	MaxCount   int       `json:"max_count"`
	LastChange time.Time `json:"last_change"` // last change of Count, for any reason; zero if never
	// LastDecision is the last decision taken for the zone, hold included
	// (a hold is not audited but is kept here). Nil until the first round.
	LastDecision *autoscaler.Decision `json:"last_decision,omitempty"`
	Created      time.Time            `json:"created"`
	// LastScale is the last decision that changed Count: an up or down of
	// the scheduler, or a forced set, whose reason names its cause and actor
	// ("max lowered to 1 by ops"). A later hold does not replace it. Nil
	// until the count first changes.
	LastScale *autoscaler.Decision `json:"last_scale,omitempty"`
}

// AuditEntry is one line of the audit log. ID and At order the log; ID is
// assigned by the store.
type AuditEntry struct {
	ID     uint64            `json:"id"`
	At     time.Time         `json:"at"`
	Actor  string            `json:"actor"` // key name, or "scheduler"
	Group  string            `json:"group,omitempty"`
	Zone   string            `json:"zone,omitempty"`
	Action string            `json:"action"` // workers.autoscale, workers.max_count, ...
	Tags   map[string]string `json:"tags,omitempty"`
	Error  string            `json:"error,omitempty"` // "forbidden", "invalid", or a failure; empty on success
}

// AutoRebalance is the scheduler's configuration.
type AutoRebalance struct {
	Enabled  bool          `json:"enabled"`
	Interval time.Duration `json:"interval_ns"`
}

// AuditQuery filters the audit log. Empty strings match anything.
type AuditQuery struct {
	Group, Zone, Action string
	// Groups, when non-nil, restricts entries to these groups (a group
	// admin's view); entries without a group are then left out.
	Groups []string
	// Limit caps the number of entries returned (newest first); <= 0 means 100.
	Limit int
}

// MaxEntries is how many entries q returns at most: Limit, or 100 when
// Limit is <= 0.
func (q AuditQuery) MaxEntries() int {
	if q.Limit <= 0 {
		return 100
	}
	return q.Limit
}

// Matches reports whether q selects e: e's group, zone and action as q names
// them (an empty one matches anything) and, when Groups is non-nil, e's group
// among them. Every Backend's Audit filters with it.
func (q AuditQuery) Matches(e AuditEntry) bool {
	return (q.Group == "" || e.Group == q.Group) && (q.Zone == "" || e.Zone == q.Zone) &&
		(q.Action == "" || e.Action == q.Action) && (q.Groups == nil || slices.Contains(q.Groups, e.Group))
}

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for the file lock another process holds;
	// 0 means 5 s. bbolt allows one writer process per file.
	LockTimeout time.Duration
	// NoSync skips fsync after each commit. Only for tests and benchmarks:
	// a crash may then lose the last commits.
	NoSync bool
}

// Store is the bbolt-backed state. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens (creating if needed) the state file at path.
func Open(path string, o Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}
	lt := o.LockTimeout
	if lt <= 0 {
		lt = 5 * time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lt, NoSync: o.NoSync, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("store: open %s: file is locked by another process (waited %s): %w", path, lt, err)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketZones, bucketAudit, bucketConfig} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the file the store was opened from.
func (s *Store) Path() string { return s.path }

// Close closes the file. Later calls fail with ErrClosed.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// Ready returns nil while the store is open and readable (for /readyz).
func (s *Store) Ready() error {
	return s.view("ready", func(*bolt.Tx) error { return nil })
}

func zoneKey(group, zone string) []byte {
	k := make([]byte, 0, len(group)+1+len(zone))
	k = append(k, group...)
	k = append(k, 0)
	return append(k, zone...)
}

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

func (s *Store) view(op string, fn func(*bolt.Tx) error) error {
	return wrap(op, s.db.View(fn))
}

func (s *Store) update(op string, fn func(*bolt.Tx) error) error {
	return wrap(op, s.db.Update(fn))
}

// Zone reads one zone; ErrNotFound when it does not exist.
func (s *Store) Zone(group, zone string) (Zone, error) {
	var z Zone
	err := s.view("read zone "+group+"/"+zone, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketZones).Get(zoneKey(group, zone))
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &z)
	})
	return z, err
}

// Zones lists every zone, sorted by group then zone.
func (s *Store) Zones() ([]Zone, error) {
	var out []Zone
	err := s.view("list zones", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketZones).ForEach(func(k, v []byte) error {
			var z Zone
			if err := json.Unmarshal(v, &z); err != nil {
				return fmt.Errorf("decode zone %q: %w", bytes.ReplaceAll(k, []byte{0}, []byte{'/'}), err)
			}
			out = append(out, z)
			return nil
		})
	})
	// bbolt iterates in key order, and group NUL zone sorts as (group, zone).
	return out, err
}

// PutZone writes one zone.
func (s *Store) PutZone(z Zone) error {
	_, err := s.Commit([]Zone{z}, nil)
	return err
}

// AppendAudit appends one entry and returns it with its ID.
func (s *Store) AppendAudit(e AuditEntry) (AuditEntry, error) {
	out, err := s.Commit(nil, []AuditEntry{e})
	if err != nil {
		return AuditEntry{}, err
	}
	return out[0], nil
}

// Commit writes zones and appends audit entries in one transaction: either
// all land or none. It returns the entries with their IDs.
func (s *Store) Commit(zones []Zone, audits []AuditEntry) ([]AuditEntry, error) {
	return s.commitAfter("commit", zones, audits, func(*bolt.Tx) error { return nil })
}

// commitAfter runs first and then commit (zones written, audits appended) in
// one update transaction; op names it in the errors (update). It returns the
// audit entries with their IDs, nil on any error: then nothing landed.
func (s *Store) commitAfter(op string, zones []Zone, audits []AuditEntry, first func(*bolt.Tx) error) ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.update(op, func(tx *bolt.Tx) error {
		if err := first(tx); err != nil {
			return err
		}
		var err error
		out, err = commit(tx, zones, audits)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// putKeyed JSON-encodes v, the record of kind "zone" or "policy" of group
// and zone, and puts it in b under zoneKey(group, zone); an empty group or
// zone is an error. kind names the record in the errors.
func putKeyed(b *bolt.Bucket, kind, group, zone string, v any) error {
	if group == "" || zone == "" {
		return fmt.Errorf("%s %q/%q: empty group or zone", kind, group, zone)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s/%s: %w", kind, group, zone, err)
	}
	if err := b.Put(zoneKey(group, zone), enc); err != nil {
		return fmt.Errorf("put %s %s/%s: %w", kind, group, zone, err)
	}
	return nil
}

func commit(tx *bolt.Tx, zones []Zone, audits []AuditEntry) ([]AuditEntry, error) {
	zb := tx.Bucket(bucketZones)
	for _, z := range zones {
		if err := putKeyed(zb, "zone", z.Group, z.Zone, z); err != nil {
			return nil, err
		}
	}
	out := make([]AuditEntry, len(audits))
	copy(out, audits)
	ab := tx.Bucket(bucketAudit)
	for i := range out {
		id, err := ab.NextSequence()
		if err != nil {
			return nil, fmt.Errorf("audit id: %w", err)
		}
		out[i].ID = id
		v, err := json.Marshal(out[i])
		if err != nil {
			return nil, fmt.Errorf("encode audit %s: %w", out[i].Action, err)
		}
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], id)
		if err := ab.Put(k[:], v); err != nil {
			return nil, fmt.Errorf("put audit %d: %w", id, err)
		}
	}
	return out, nil
}

// ZoneDecision is a zone's last decision, for SetLastDecisions.
type ZoneDecision struct {
	Group, Zone string
	Decision    autoscaler.Decision
}

// SetLastDecisions records the last decision of several zones in one
// transaction (a scheduler pass keeps holds in memory and writes them here
// once). Only LastDecision changes; a zone that no longer exists is skipped,
// and a decision older than the stored one never overwrites it.
func (s *Store) SetLastDecisions(ds []ZoneDecision) error {
	if len(ds) == 0 {
		return nil
	}
	return s.update("set last decisions", func(tx *bolt.Tx) error {
		zb := tx.Bucket(bucketZones)
		for _, d := range ds {
			k := zoneKey(d.Group, d.Zone)
			v := zb.Get(k)
			if v == nil {
				continue
			}
			var z Zone
			if err := json.Unmarshal(v, &z); err != nil {
				return fmt.Errorf("decode zone %s/%s: %w", d.Group, d.Zone, err)
			}
			if z.LastDecision != nil && z.LastDecision.At.After(d.Decision.At) {
				continue
			}
			dec := d.Decision
			z.LastDecision = &dec
			if err := putKeyed(zb, "zone", d.Group, d.Zone, z); err != nil {
				return err
			}
		}
		return nil
	})
}

// Audit returns entries matching q, newest first.
func (s *Store) Audit(q AuditQuery) ([]AuditEntry, error) {
	limit := q.MaxEntries()
	out := []AuditEntry{}
	err := s.view("read audit", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			var e AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode audit %x: %w", k, err)
			}
			if q.Matches(e) {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AutoRebalance reads the scheduler configuration; the default (off, 60 s)
// when none was ever set.
func (s *Store) AutoRebalance() (AutoRebalance, error) {
	c := AutoRebalance{Enabled: false, Interval: DefaultInterval}
	err := s.view("read config", func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConfig).Get(keyAutoReb)
		if v == nil {
			return nil
		}
		return json.Unmarshal(v, &c)
	})
	return c, err
}

// SetAutoRebalance writes the scheduler configuration and appends audit
// entries in the same transaction. It returns the entries with their IDs.
func (s *Store) SetAutoRebalance(c AutoRebalance, audits ...AuditEntry) ([]AuditEntry, error) {
	if c.Interval <= 0 {
		return nil, fmt.Errorf("store: set config: interval %s must be > 0", c.Interval)
	}
	v, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("store: encode config: %w", err)
	}
	return s.commitAfter("set config", nil, audits, func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketConfig).Put(keyAutoReb, v); err != nil {
			return fmt.Errorf("put config: %w", err)
		}
		return nil
	})
}
