package workspace

import (
	"errors"
	"testing"
	"time"

	"github.com/tfccm/tfccm/workspace/tofu"
)

// TestGauges: workspaces are counted by phase (a rejected input is
// Invalid, not Failed), the oldest plan awaiting approval gives the age,
// and every applied workspace its last apply time.
func TestGauges(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	applied := now.Add(-time.Hour)
	e := &Engine{ws: map[string]*entry{
		"a": {status: Status{Phase: PhaseApplied}, rec: record{AppliedAt: applied}},
		"b": {status: Status{Phase: PhaseRunning}},
		"c": {status: Status{Phase: PhaseFailed, Err: errors.New("boom")}},
		"d": {status: Status{Phase: PhaseFailed, Err: &tofu.Error{Op: "plan", Invalid: true}}},
		"e": {status: Status{Phase: PhaseAwaitingApproval, Since: now.Add(-3 * time.Minute)}},
		"f": {status: Status{Phase: PhaseAwaitingApproval, Since: now.Add(-time.Minute)}},
		"g": {status: Status{Phase: PhaseDestroyed}, rec: record{AppliedAt: applied}},
	}}
	g := e.gauges(now)
	want := map[string]int{"Applied": 1, "Running": 1, "Failed": 1, "Invalid": 1, "AwaitingApproval": 2}
	for p, n := range want {
		if g.phases[p] != n {
			t.Errorf("phase %s: %d, want %d", p, g.phases[p], n)
		}
	}
	if len(g.phases) != len(want) {
		t.Errorf("phases %v, want %v", g.phases, want)
	}
	if g.oldestApproval != 3*time.Minute {
		t.Errorf("oldest approval %s, want 3m", g.oldestApproval)
	}
	if len(g.lastApply) != 1 || !g.lastApply["a"].Equal(applied) {
		t.Errorf("last applies %v, want a at %s", g.lastApply, applied)
	}
	if g := (*Engine)(nil).gauges(now); len(g.phases) != 0 {
		t.Errorf("nil engine: %v", g.phases)
	}
}
