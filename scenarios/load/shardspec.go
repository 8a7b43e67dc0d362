package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ShardSpec is what every shard of a distributed load is given (the same
// for all of them): the common start time, the number of shards, the
// target, and the whole load's profile, which each shard splits for
// itself (Profile.Split, ArrivalProfile.Split). It travels as JSON in the
// shard's arguments (`scaleproof load-shard --spec JSON`), so it must hold
// no secret.
type ShardSpec struct {
	// Start is when every shard starts its part (absolute, UTC); a shard
	// that comes up later starts at once and says by how much it was late.
	Start  time.Time   `json:"start"`
	Shards int         `json:"shards"`
	Target ShardTarget `json:"target"`
	// Exactly one of Closed and Open.
	Closed *Profile        `json:"closed,omitempty"`
	Open   *ArrivalProfile `json:"open,omitempty"`
}

// ShardTarget is what a shard calls: MCP tools/call Tool with Args at URL,
// or plain HTTP Method with Body when Tool is empty.
type ShardTarget struct {
	URL     string            `json:"url"`
	Tool    string            `json:"tool,omitempty"`
	Args    json.RawMessage   `json:"args,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Method  string            `json:"method,omitempty"`
	Body    string            `json:"body,omitempty"`
	// Timeout per request; 0 means 60 s (k6's default).
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	// Client is "fast" (the default for http://) or "net/http".
	Client string `json:"client,omitempty"`
}

// MaxShards bounds the shards of one load.
const MaxShards = 1000

// Validate reports what is wrong with s, joined.
func (s ShardSpec) Validate() error {
	var errs []error
	if s.Start.IsZero() {
		errs = append(errs, errors.New("no start time"))
	}
	if s.Shards < 1 || s.Shards > MaxShards {
		errs = append(errs, fmt.Errorf("shards %d out of [1, %d]", s.Shards, MaxShards))
	}
	if s.Target.URL == "" {
		errs = append(errs, errors.New("no target URL"))
	}
	switch {
	case (s.Closed == nil) == (s.Open == nil):
		errs = append(errs, errors.New("want exactly one of a closed and an open profile"))
	case s.Closed != nil:
		errs = append(errs, s.Closed.Validate())
	default:
		errs = append(errs, s.Open.Validate())
	}
	var msgs []string
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, strings.ReplaceAll(e.Error(), "\n", "; "))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("load: shard spec: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// Encode is s as the JSON of `load-shard --spec`.
func (s ShardSpec) Encode() (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// DecodeShardSpec reads and validates a spec written by Encode.
func DecodeShardSpec(js string) (ShardSpec, error) {
	var s ShardSpec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		return ShardSpec{}, fmt.Errorf("load: shard spec: %w", err)
	}
	return s, s.Validate()
}

// PeakVUs is the most VUs the whole load may use (closed: its peak;
// open: maxVUs).
func (s ShardSpec) PeakVUs() int {
	if s.Closed != nil {
		return s.Closed.PeakVUs()
	}
	if s.Open != nil {
		return s.Open.maxVUs()
	}
	return 0
}

// TotalDuration is the whole load's time during which iterations start,
// plus its graceful stop.
func (s ShardSpec) TotalDuration() time.Duration {
	if s.Closed != nil {
		return s.Closed.TotalDuration() + s.Closed.GracefulStop
	}
	if s.Open != nil {
		return s.Open.TotalDuration() + s.Open.GracefulStop
	}
	return 0
}
