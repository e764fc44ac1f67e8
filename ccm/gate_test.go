package ccm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace/plans"
)

// TestGatePolicy: the gate built from the shipped examples denies naming
// the rule, holds for approval, and passes warnings on; a denied result
// is a TerraformPlanDenied Event and a PolicyDenied condition naming the
// rule, and each warning a TerraformPlanPolicyWarning Event.
func TestGatePolicy(t *testing.T) {
	src := "cluster_name = \"prod\"\n"
	for _, f := range []string{"at-most-2-destroys.hcl", "replacement-needs-approval.hcl"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "policy", f))
		if err != nil {
			t.Fatal(err)
		}
		src += string(b)
	}
	cfg, err := config.Parse([]byte(src), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	gate, err := newGate(cfg)
	if err != nil || gate == nil {
		t.Fatalf("gate %v, %v", gate, err)
	}
	change := func(addr string, actions ...any) any {
		return map[string]any{"address": addr, "type": "t", "mode": "managed", "change": map[string]any{"actions": actions}}
	}
	doc := func(rcs ...any) map[string]any { return map[string]any{"resource_changes": rcs} }

	v := gate.judge(plans.GateInput{Workspace: "lb-prod-1", Plan: doc(change("t.a", "delete"), change("t.b", "delete"), change("t.c", "delete", "create"))})
	if !strings.Contains(v.Denied, "policy at-most-2-destroys: destroys 3 resources") {
		t.Errorf("verdict %+v: want the destroy rule's denial", v)
	}
	v = gate.judge(plans.GateInput{Workspace: "lb-prod-1", Plan: doc(change("t.c", "delete", "create"))})
	if v.Denied != "" || !strings.Contains(v.Approval, "replacement-needs-approval") || len(v.Warnings) != 0 {
		t.Errorf("verdict %+v: want approval", v)
	}
	v = gate.judge(plans.GateInput{Workspace: "lb-prod-1", Plan: doc(change("t.a", "delete"))})
	if v.Denied != "" || v.Approval != "" || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "destroys-warn") {
		t.Errorf("verdict %+v: want one warning", v)
	}
	if g, err := newGate(&config.Config{}); g != nil || err != nil || g.engineGate() != nil {
		t.Errorf("no policies: gate %v, %v", g, err)
	}
}

// TestGateChangeWindows: outside the allow window a plan is held until
// the next opening, which the Event and the condition name; creates pass
// when allow_creates says so; a held result is published as
// TerraformChangeWindowClosed with Programmed=False ChangeWindowClosed.
func TestGateChangeWindows(t *testing.T) {
	cfg, err := config.Parse([]byte(`cluster_name = "prod"
change_windows {
  allow_creates = true
  window "nights" {
    kind     = "allow"
    schedule = "0 22 * * *"
    duration = "4h"
  }
}
`), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	gate, err := newGate(cfg)
	if err != nil || gate == nil {
		t.Fatalf("gate %v, %v", gate, err)
	}
	gate.gate.Now = func() time.Time { return time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC) }
	v := gate.judge(plans.GateInput{Workspace: "lb-prod-1"})
	if !strings.Contains(v.Hold, "next window opens at 2026-11-25T22:00:00Z") || !v.HoldUntil.Equal(time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)) {
		t.Errorf("verdict %+v", v)
	}
	if v := gate.judge(plans.GateInput{Workspace: "lb-prod-1", Create: true}); v.Hold != "" {
		t.Errorf("a create was held: %+v", v)
	}
	if v := gate.judge(plans.GateInput{Workspace: "lb-prod-1", Destroy: true}); v.Hold == "" {
		t.Errorf("a delete passed: %+v", v)
	}
	gate.gate.Now = func() time.Time { return time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC) }
	if v := gate.judge(plans.GateInput{Workspace: "lb-prod-1"}); v.Hold != "" {
		t.Errorf("held inside the window: %+v", v)
	}
}
