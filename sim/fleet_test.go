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
