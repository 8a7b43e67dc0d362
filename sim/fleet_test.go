package sim

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestFleet: a small fleet under its fluid load: zones scale up and down
// through the controller's passes, nothing fails, replica-seconds add up.
func TestFleet(t *testing.T) {
	fc := NewFleetConfig()
	fc.Zones, fc.Duration, fc.Period = 200, 20*time.Minute, 20*time.Minute
	rep, err := RunFleet(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passes != 60 || rep.Errors != 0 || rep.Up == 0 || rep.Down == 0 || rep.Refused <= 0 || rep.CallsOK <= 0 {
		t.Fatalf("fleet %+v", rep)
	}
	if min := float64(fc.Zones) * fc.Duration.Seconds(); rep.ReplicaS < min {
		t.Fatalf("replica-seconds %.0f under one worker per zone all along (%.0f)", rep.ReplicaS, min)
	}
	if _, err := RunFleet(context.Background(), FleetConfig{}); err == nil {
		t.Fatal("an empty fleet config ran")
	}
	bad := fc
	bad.Zones, bad.Duration = -5, -time.Hour
	if _, err := RunFleet(context.Background(), bad); err == nil || err.Error() != "sim: fleet: zones -5: want >= 1; duration -1h0m0s: want > 0" {
		t.Errorf("a fleet of -5 zones for -1h: %v, want each bad value named", err)
	}
}

// TestFleetScale measures the 10,000-zone hour when SCALEPROOF_FLEET is set
// to a zone count (it takes about a minute).
func TestFleetScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SCALEPROOF_FLEET"))
	if n == 0 {
		t.Skip("set SCALEPROOF_FLEET=10000 to measure a fleet")
	}
	fc := NewFleetConfig()
	fc.Zones = n
	if d, err := time.ParseDuration(os.Getenv("SCALEPROOF_FLEET_DURATION")); err == nil {
		fc.Duration = d
	}
	rep, err := RunFleet(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
}

// TestFleetForgetsRemovedWorkers: a fleet zone's removed workers leave its
// worker map (memory stays bounded over long runs).
func TestFleetForgetsRemovedWorkers(t *testing.T) {
	z := testZone(baseModel())
	z.fluid = &fluid{amp: 64, period: time.Hour}
	z.scale(4, nil)
	z.l.now.Store(int64(10 * time.Second))
	z.endpoints() // advance: the routable workers carry calls
	z.scale(1, nil)
	if len(z.byID) != 1 {
		t.Fatalf("%d workers known after scaling 4 -> 1, want 1", len(z.byID))
	}
}

// TestFleetSeeded: a fleet run's decisions and sums are the same for the
// same seed.
func TestFleetSeeded(t *testing.T) {
	fc := NewFleetConfig()
	fc.Zones, fc.Duration = 50, 10*time.Minute
	a, err := RunFleet(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunFleet(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	if a.Up != b.Up || a.Down != b.Down || a.ReplicaS != b.ReplicaS || a.CallsOK != b.CallsOK || a.Refused != b.Refused {
		t.Fatalf("same seed, different fleets:\n%+v\n%+v", a, b)
	}
}
