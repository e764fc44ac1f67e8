package lbcontroller

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/workspace"
)

// TestApprovedApplySyncsItsService: the first successful apply after an
// approval syncs the Service again (its approval changed nothing on the
// Service, so nothing else would), once; a failed apply or an apply
// without an approval does not.
func TestApprovedApplySyncsItsService(t *testing.T) {
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, _ := newPhaseTest(eng, fakeRenderer{})
	synced := make(chan string, 10)
	l.afterApproval = func(svc *corev1.Service) { synced <- svc.Name }
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil); err == nil {
		t.Fatal("in-flight Ensure returned no error")
	}
	for _, step := range []struct {
		approved bool
		result   workspace.Result
		want     int
	}{
		{false, workspace.Result{Op: "apply", Changed: true}, 0},
		{true, workspace.Result{Op: "apply", Err: errors.New("apply: boom")}, 0},
		{true, workspace.Result{Op: "apply", Changed: true}, 1},
		{false, workspace.Result{Op: "apply", Changed: true}, 0},
	} {
		if step.approved {
			l.approvalAccepted("lb-c-u1")
		}
		l.onResult("lb-c-u1", step.result)
		got := 0
		if step.want > 0 {
			if name := <-synced; name == "web" {
				got++
			}
		}
		select {
		case name := <-synced:
			t.Fatalf("after %+v: Service %s synced, want %d", step.result, name, step.want)
		case <-time.After(200 * time.Millisecond):
		}
		if got != step.want {
			t.Fatalf("after %+v: %d syncs, want %d", step.result, got, step.want)
		}
	}
}
