package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/workspace"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestPlanData(t *testing.T) {
	hash := strings.Repeat("a", 64)
	small := &workspace.PendingPlan{Hash: hash, Add: 1, Text: "Plan: 1 to add", JSON: []byte(`{"x":1}`)}
	big := &workspace.PendingPlan{Hash: hash, Change: 2, Text: strings.Repeat("t", 2<<20), JSON: []byte(strings.Repeat("j", 100))}
	mid := &workspace.PendingPlan{Hash: hash, Remove: 3, Text: strings.Repeat("t", 600<<10), JSON: []byte(strings.Repeat("j", 600<<10))}
	for _, tc := range []struct {
		name      string
		p         *workspace.PendingPlan
		truncated bool
		json      bool
		summary   string
	}{
		{"small", small, false, true, "1 to add, 0 to change, 0 to destroy"},
		{"text above the limit", big, true, true, "0 to add, 2 to change, 0 to destroy"},
		{"json does not fit", mid, false, false, "0 to add, 0 to change, 3 to destroy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := planData(tc.p, maxPublishedPlan)
			size := 0
			for k, v := range d {
				size += len(k) + len(v)
			}
			if size > maxPublishedPlan {
				t.Errorf("data is %d bytes, above %d", size, maxPublishedPlan)
			}
			if d["summary"] != tc.summary || d["plan-hash"] != hash {
				t.Errorf("summary %q hash %q", d["summary"], d["plan-hash"])
			}
			if got := strings.Contains(d["plan.txt"], "[truncated by tfccm"); got != tc.truncated {
				t.Errorf("truncation marker present = %v, want %v", got, tc.truncated)
			}
			if !tc.truncated && d["plan.txt"] != tc.p.Text {
				t.Error("text changed although it fits")
			}
			if _, got := d["plan.json"]; got != tc.json {
				t.Errorf("plan.json present = %v, want %v", got, tc.json)
			}
			if _, omitted := d["plan.json.omitted"]; omitted == tc.json {
				t.Errorf("plan.json.omitted note present = %v", omitted)
			}
		})
	}
}

func TestPendingMessage(t *testing.T) {
	p := &workspace.PendingPlan{Hash: strings.Repeat("c", 64), Destroy: true, Remove: 1}
	msg := pendingMessage("ns", "lb-x", p, "the Service")
	for _, want := range []string{"destroy plan " + p.Hash, "0 to add, 0 to change, 1 to destroy", "ns/tfccm-plan-lb-x", "tfccm.io/approved-plan=" + p.Hash} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestReplacedPlanIsNamed: a plan made for new inputs names the plan it
// replaced, which can no longer be approved.
func TestReplacedPlanIsNamed(t *testing.T) {
	old := strings.Repeat("a", 64)
	p := &workspace.PendingPlan{Hash: strings.Repeat("b", 64), Replaces: old, Add: 1}
	if msg := pendingMessage("ns", "lb-x", p, "the Service"); !strings.HasPrefix(msg, "apply plan "+p.Hash+" awaiting approval (replaces plan "+old) {
		t.Errorf("message %q does not name the replaced plan", msg)
	}
}

// TestDriftRepairIsNamed: a drift repair awaiting approval says so in the
// Event and in the summary the plan ConfigMap publishes.
func TestDriftRepairIsNamed(t *testing.T) {
	p := &workspace.PendingPlan{Hash: strings.Repeat("d", 64), Drift: true, Add: 1, Remove: 1}
	if msg := pendingMessage("ns", "lb-x", p, "the Service"); !strings.HasPrefix(msg, "drift repair plan "+p.Hash) || !strings.Contains(msg, "drifted") {
		t.Errorf("message %q does not name the drift repair", msg)
	}
	if data := planData(p, maxPublishedPlan); !strings.HasPrefix(data["summary"], "drift repair") {
		t.Errorf("published summary %q does not name the drift repair", data["summary"])
	}
}

// approveEngine answers Approve with err.
type approveEngine struct{ err error }

func (a approveEngine) Approve(string, string) error   { return a.err }
func (a approveEngine) Status(string) workspace.Status { return workspace.Status{} }

// TestReapprovingAnAppliedPlanSaysSo: an approval annotation naming the
// plan that was already applied gets one Normal Event saying so, however
// often the Service is synced.
func TestReapprovingAnAppliedPlanSaysSo(t *testing.T) {
	var events []recordedEvent
	rv := newReviewer(approveEngine{err: fmt.Errorf("approve lb-c-u1: %w", workspace.ErrAlreadyApplied)}, fakeRenderer{}, func(_ runtime.Object, typ, reason, msg string) {
		events = append(events, recordedEvent{typ, reason, msg})
	})
	svc := phaseService()
	svc.Annotations = map[string]string{annotations.ApprovedPlan.Name: strings.Repeat("e", 64)}
	for range 3 {
		rv.approveService(svc)
	}
	if len(events) != 1 || events[0].reason != ReasonPlanAlreadyApplied || !strings.Contains(events[0].message, "already approved and applied") {
		t.Fatalf("events = %+v, want one %s", events, ReasonPlanAlreadyApplied)
	}
}
