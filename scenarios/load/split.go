package load

import (
	"fmt"
	"math"
)

// Splitting a load over shards (load generators that run at once, one
// Kubernetes pod each), after k6's execution segments
// (https://grafana.com/docs/k6/latest/using-k6/k6-options/reference/#execution-segment):
// the total is cut into n equal segments and every quantity of the profile
// (VUs, stage targets, rates, preAllocatedVUs, maxVUs, MaxIterations) is
// split so that the shards' shares add up exactly to the total.
//
// The rule for a whole quantity t over n shards: shard i (0-based) gets
// t/n, plus one when i < t%n, so 64 VUs over 3 shards are 22/21/21 and 2
// over 3 are 1/1/0. A rate is split the same way on its whole part; its
// fraction goes to the first shard that got no extra one, so 500.5 per
// second over 3 is 167/167/166.5. Durations, time unit, think time and the
// graceful periods are not split: every shard runs the whole timeline.
//
// Within a ramping stage each shard rounds its own interpolation down, so
// between stage ends the shards' VUs may add up to as many as n-1 below the
// total's; at every stage end they add up exactly.

// ShareInt is shard i's share of t over n shards (0 <= i < n, t >= 0):
// t/n, plus one for the first t%n shards. The n shares add up to t.
func ShareInt(t int64, i, n int) int64 {
	if n <= 0 || i < 0 || i >= n || t <= 0 {
		return 0
	}
	q, r := t/int64(n), t%int64(n)
	if int64(i) < r {
		q++
	}
	return q
}

// ShareRate is shard i's share of rate r over n shards: ShareInt of its
// whole part, and its fraction for the shard ShareInt gave no extra one
// first (shard (whole part mod n)). The n shares add up to r.
func ShareRate(r float64, i, n int) float64 {
	if n <= 0 || i < 0 || i >= n || !(r > 0) {
		return 0
	}
	whole := math.Floor(r)
	s := float64(ShareInt(int64(whole), i, n))
	if frac := r - whole; frac > 0 && int64(i) == int64(whole)%int64(n) {
		s += frac
	}
	return s
}

// ErrIdleShard is returned by Split when shard i's share of the load is
// nothing (fewer VUs or less rate than shards): the shard runs no
// iteration and reports an empty result.
var ErrIdleShard = fmt.Errorf("load: this shard's share of the load is empty")

func checkShard(i, n int) error {
	if n < 1 || i < 0 || i >= n {
		return fmt.Errorf("load: shard %d of %d: want 0 <= shard < shards, shards >= 1", i, n)
	}
	return nil
}

// Split returns shard i's part of p over n shards (see the rules above).
// It returns ErrIdleShard when the part has no VU at all; other errors are
// for a bad i or n.
func (p Profile) Split(i, n int) (Profile, error) {
	if err := checkShard(i, n); err != nil {
		return Profile{}, err
	}
	q := p
	share := func(v int) int { return int(ShareInt(int64(v), i, n)) }
	q.VUs = share(p.VUs)
	q.StartVUs = share(p.StartVUs)
	if p.Stages != nil {
		q.Stages = make([]Stage, len(p.Stages))
		for k, s := range p.Stages {
			q.Stages[k] = Stage{Duration: s.Duration, Target: share(s.Target)}
		}
	}
	q.MaxIterations = max(ShareInt(p.MaxIterations, i, n), 1)
	if q.PeakVUs() == 0 {
		return q, ErrIdleShard
	}
	return q, nil
}

// Split returns shard i's part of p over n shards (see the rules above):
// rates, preAllocatedVUs, maxVUs and MaxIterations split. It returns
// ErrIdleShard when the part has no rate or no VU.
func (p ArrivalProfile) Split(i, n int) (ArrivalProfile, error) {
	if err := checkShard(i, n); err != nil {
		return ArrivalProfile{}, err
	}
	q := p
	q.Rate = ShareRate(p.Rate, i, n)
	q.StartRate = ShareRate(p.StartRate, i, n)
	peak := q.Rate + q.StartRate
	if p.Stages != nil {
		q.Stages = make([]RateStage, len(p.Stages))
		for k, s := range p.Stages {
			q.Stages[k] = RateStage{Duration: s.Duration, Target: ShareRate(s.Target, i, n)}
			peak = max(peak, q.Stages[k].Target)
		}
	}
	q.PreAllocatedVUs = int(ShareInt(int64(p.PreAllocatedVUs), i, n))
	q.MaxVUs = int(ShareInt(int64(p.maxVUs()), i, n))
	q.MaxIterations = max(ShareInt(p.MaxIterations, i, n), 1)
	if peak == 0 || q.MaxVUs == 0 {
		return q, ErrIdleShard
	}
	return q, nil
}
