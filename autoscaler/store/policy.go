package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketPolicies holds each zone's decision policy, keyed like
// zones. A zone without an entry runs the step policy. The bucket is created
// by the first write, so files written before it existed open unchanged.
var bucketPolicies = []byte("policies")

// ZonePolicy is the persisted policy of one group × zone: Policy names it
// ("step" or "hpa") and Spec is its configuration as the controller encodes
// it (the store does not read it).
type ZonePolicy struct {
	Group   string          `json:"group"`
	Zone    string          `json:"zone"`
	Policy  string          `json:"policy"`
	Spec    json.RawMessage `json:"spec,omitempty"`
	Updated time.Time       `json:"updated"`
}

// Policies lists every zone's stored policy, sorted by group then zone.
func (s *Store) Policies() ([]ZonePolicy, error) {
	var out []ZonePolicy
	err := s.view("list policies", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPolicies)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var p ZonePolicy
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decode policy %q: %w", k, err)
			}
			out = append(out, p)
			return nil
		})
	})
	return out, err
}

// CommitPolicies writes policies and zones and appends audit entries in one
// transaction: either all land or none. It returns the entries with their IDs.
func (s *Store) CommitPolicies(policies []ZonePolicy, zones []Zone, audits []AuditEntry) ([]AuditEntry, error) {
	return s.commitAfter("commit policies", zones, audits, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketPolicies)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketPolicies, err)
		}
		for _, p := range policies {
			if err := putKeyed(b, "policy", p.Group, p.Zone, p); err != nil {
				return err
			}
		}
		return nil
	})
}
