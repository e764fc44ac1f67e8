package lbcontroller

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

func TestEventsRecordChangesNotRetries(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	e := newEvents()
	e.setRecorder(rec)
	svc := phaseService()
	other := phaseService()
	other.UID = "u2"
	for _, ev := range []struct {
		obj              *corev1.Service
		typ, reason, msg string
	}{
		{svc, corev1.EventTypeWarning, ReasonApplyFailed, "tofu plan failed (attempt 1): Invalid value"},
		{svc, corev1.EventTypeWarning, ReasonApplyFailed, "tofu plan failed (attempt 2): Invalid value"}, // a retry: dropped
		{other, corev1.EventTypeWarning, ReasonApplyFailed, "tofu plan failed (attempt 1): Invalid value"},
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, "annotation tfccm.io/vars: not valid JSON"}, // a new problem
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, "annotation tfccm.io/vars: not valid JSON"}, // dropped
		{svc, corev1.EventTypeNormal, ReasonApplied, "plan applied in 1s"},
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, "annotation tfccm.io/vars: not valid JSON"}, // again after a success
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, strings.Repeat("é", 2000)},
	} {
		e.event(ev.obj, ev.typ, ev.reason, ev.msg)
	}
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	want := []string{
		"Warning TerraformApplyFailed tofu plan failed (attempt 1): Invalid value",
		"Warning TerraformApplyFailed tofu plan failed (attempt 1): Invalid value",
		"Warning TerraformRenderFailed annotation tfccm.io/vars: not valid JSON",
		"Normal TerraformApplied plan applied in 1s",
		"Warning TerraformRenderFailed annotation tfccm.io/vars: not valid JSON",
	}
	if len(got) != len(want)+1 {
		t.Fatalf("recorded %d events, want %d: %q", len(got), len(want)+1, got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d = %q, want %q", i, got[i], w)
		}
	}
	last := got[len(got)-1]
	if len(last) > maxEventMessage+len("Warning TerraformRenderFailed ") || !strings.HasSuffix(last, "... (truncated)") {
		t.Errorf("long message not truncated: %d bytes", len(last))
	}
}

// TestEventsDocUpToDate fails when docs/events.md is not what the reason
// declarations generate; go generate ./provider (-update) rewrites it.
func TestEventsDocUpToDate(t *testing.T) {
	testkit.Golden(t, filepath.Join("..", "..", "docs", "events.md"), []byte(eventsDocument()))
}

// TestReasonsDeclared: every reason has a type and a doc, and the types
// are the ones resultEvent records them with.
func TestReasonsDeclared(t *testing.T) {
	for _, r := range allReasons() {
		if r.Doc == "" || (r.Type != corev1.EventTypeNormal && r.Type != corev1.EventTypeWarning) {
			t.Errorf("reason %s: type %q, doc %q", r.Name, r.Type, r.Doc)
		}
	}
	for _, r := range []workspace.Result{
		{Op: "apply"}, {Op: "apply", Changed: true}, {Op: "destroy"}, {Op: "apply", Err: errors.New("x")},
		{Op: "destroy", Err: errors.New("x")}, {Op: "apply", Drift: true, Changed: true}, {Op: "apply", Drift: true, Err: errors.New("x")},
		{Op: "apply", LockHolder: "someone", Err: errors.New("x")}, {Op: "apply", Err: plans.ErrStateChanged},
	} {
		typ, reason, _ := resultEvent(r)
		if d, ok := reasonDecl(reason); !ok || d.Type != typ {
			t.Errorf("result %+v: %s %s, declared %+v", r, typ, reason, d)
		}
	}
	for _, o := range outcomes {
		if o.event == nil {
			continue
		}
		if d, ok := reasonDecl(o.event.reason); !ok || d.Type != o.event.typ {
			t.Errorf("outcome %q: Event %s %s, declared %+v", o.name, o.event.typ, o.event.reason, d)
		}
	}
}

func reasonDecl(name string) (Reason, bool) {
	for _, r := range allReasons() {
		if r.Name == name {
			return r, true
		}
	}
	return Reason{}, false
}

// TestEventSpamIsPerReason: a run of Warnings of one reason on a Service
// uses up that reason's burst only; the next Warning of another reason is
// recorded (client-go's own key drops it), and the run itself is still
// limited.
func TestEventSpamIsPerReason(t *testing.T) {
	svc := phaseService()
	event := func(reason, message string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web." + reason + message, Namespace: svc.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID, APIVersion: "v1"},
			Reason:         reason, Message: message, Type: corev1.EventTypeWarning,
			Source: corev1.EventSource{Component: "tfccm"}, Count: 1,
		}
	}
	for _, tc := range []struct {
		name         string
		opts         record.CorrelatorOptions
		wantRecorded bool
	}{
		{"tfccm's key", eventCorrelation(), true},
		{"client-go's key", record.CorrelatorOptions{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := record.NewEventCorrelatorWithOptions(tc.opts)
			skipped := 0
			for i := range 40 {
				r, err := c.EventCorrelate(event(ReasonDriftFailed, fmt.Sprintf("re-plan failed: host %d unreachable", i)))
				if err != nil {
					t.Fatal(err)
				}
				if r.Skip {
					skipped++
				}
			}
			if skipped == 0 {
				t.Errorf("40 drift check failures in a row: none dropped, want the run limited")
			}
			r, err := c.EventCorrelate(event(ReasonDriftRepaired, "re-applied in 2s"))
			if err != nil {
				t.Fatal(err)
			}
			if recorded := !r.Skip; recorded != tc.wantRecorded {
				t.Errorf("the drift repair after them recorded = %v, want %v", recorded, tc.wantRecorded)
			}
		})
	}
}
