package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
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

	v := gate.judge(workspace.GateInput{Workspace: "lb-prod-1", Plan: doc(change("t.a", "delete"), change("t.b", "delete"), change("t.c", "delete", "create"))})
	if !strings.Contains(v.Denied, "policy at-most-2-destroys: destroys 3 resources") {
		t.Errorf("verdict %+v: want the destroy rule's denial", v)
	}
	v = gate.judge(workspace.GateInput{Workspace: "lb-prod-1", Plan: doc(change("t.c", "delete", "create"))})
	if v.Denied != "" || !strings.Contains(v.Approval, "replacement-needs-approval") || len(v.Warnings) != 0 {
		t.Errorf("verdict %+v: want approval", v)
	}
	v = gate.judge(workspace.GateInput{Workspace: "lb-prod-1", Plan: doc(change("t.a", "delete"))})
	if v.Denied != "" || v.Approval != "" || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "destroys-warn") {
		t.Errorf("verdict %+v: want one warning", v)
	}
	if g, err := newGate(&config.Config{}); g != nil || err != nil || g.engineGate() != nil {
		t.Errorf("no policies: gate %v, %v", g, err)
	}

	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, events := newPhaseTest(eng, fakeRenderer{})
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil); err == nil {
		t.Fatal("in-flight Ensure returned no error")
	}
	denied := workspace.Result{Op: "plan", Err: &workspace.Error{Op: "plan", Summary: "policy at-most-2-destroys: destroys 3 resources", Denied: true}}
	l.onResult("lb-c-u1", denied)
	l.onResult("lb-c-u1", workspace.Result{Op: "apply", Changed: true, Verdict: workspace.GateVerdict{Warnings: []string{"policy destroys-warn: careful"}}})
	if got := reasons(*events); got != ReasonPlanDenied+","+ReasonPolicyWarning+","+ReasonApplied {
		t.Fatalf("events %q", got)
	}
	if m := (*events)[0].message; !strings.Contains(m, "at-most-2-destroys") {
		t.Errorf("denied Event %q does not name the rule", m)
	}
	conds := resultConditions(denied)
	if len(conds) != 2 || conds[1].Type != ConditionProgrammed || conds[1].Reason != CondReasonPolicyDenied || !strings.Contains(conds[1].Message, "at-most-2-destroys") {
		t.Errorf("conditions %+v", conds)
	}
}
