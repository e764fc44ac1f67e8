package ccm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// fakePeeringWS is the peering workspace of the facet's unit tests: what
// render returns, what apply and destroy return, and what was called.
type fakePeeringWS struct {
	mu sync.Mutex
	fakePeering
	applies  int
	destroys int
}

// fakePeering is what the fake workspace renders and answers.
type fakePeering struct {
	want       bool
	renderErr  error
	applyErr   error
	destroyErr error
	recallErr  error // applied's error (the catalog unreadable)
	st         workspace.Status
}

func (f *fakePeeringWS) render() (*workspace.Spec, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renderErr != nil {
		return nil, false, f.renderErr
	}
	if !f.want {
		return nil, false, nil
	}
	return &workspace.Spec{Name: templates.PeeringWorkspaceName, Hash: "h1"}, true, nil
}

func (f *fakePeeringWS) applied(context.Context) (*workspace.Spec, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.recallErr != nil {
		return nil, false, f.recallErr
	}
	if f.st.AppliedHash == "" || f.st.Phase == workspace.PhaseDestroyed {
		return nil, false, nil
	}
	return &workspace.Spec{Name: templates.PeeringWorkspaceName, Hash: f.st.AppliedHash}, true, nil
}

func (f *fakePeeringWS) apply(_ context.Context, spec *workspace.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applies++
	if f.applyErr == nil {
		f.st = workspace.Status{Name: spec.Name, Phase: workspace.PhaseApplied, AppliedHash: spec.Hash}
	}
	return f.applyErr
}

func (f *fakePeeringWS) destroy(_ context.Context, spec *workspace.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if spec == nil || spec.Hash != f.st.AppliedHash {
		panic(fmt.Sprintf("destroy of %v, not the applied peering %s", spec, f.st.AppliedHash))
	}
	f.destroys++
	if f.destroyErr == nil {
		f.st.Phase = workspace.PhaseDestroyed
	}
	return f.destroyErr
}

type recordedEvent struct{ obj, typ, reason, msg string }

// peeringUnderTest builds the facet over ws with users (usersErr: not
// synced) and records its Events.
func peeringUnderTest(ws *fakePeeringWS, users []*corev1.Service, usersErr error) (*peering, func() []recordedEvent) {
	var mu sync.Mutex
	var events []recordedEvent
	p := newPeering(ws, nil, func() ([]*corev1.Service, error) { return users, usersErr },
		func(svc *corev1.Service, typ, reason, msg string) {
			mu.Lock()
			events = append(events, recordedEvent{svc.Namespace + "/" + svc.Name, typ, reason, msg})
			mu.Unlock()
		})
	return p, func() []recordedEvent {
		mu.Lock()
		defer mu.Unlock()
		out := events
		events = nil
		return out
	}
}

func bgpService(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

var appliedPeering = workspace.Status{Name: templates.PeeringWorkspaceName, Phase: workspace.PhaseApplied, AppliedHash: "h0"}

// TestPeeringDecisions: one pass of the facet for each situation: what it
// applies or destroys, what it returns and which Events it records.
func TestPeeringDecisions(t *testing.T) {
	users := []*corev1.Service{bgpService("b", "web"), bgpService("a", "api")}
	for _, tc := range []struct {
		name      string
		ws        fakePeering
		users     []*corev1.Service
		usersErr  error
		wantErr   string // "" = nil
		applied   int
		destroyed int
		reason    string // Event reason recorded on every user ("" = none)
		wantMsg   []string
		notMsg    []string // never in the Event: another Service's name, the admin's error
	}{
		{name: "bgp configured: applied", ws: fakePeering{want: true}, users: users, applied: 1},
		{name: "apply fails: Event on every user", ws: fakePeering{want: true, applyErr: errors.New("peer 10.0.0.1: asn 64512 clashes")},
			users: users, applied: 1, wantErr: "clashes", reason: lbcontroller.ReasonPeeringFailed,
			wantMsg: []string{"BGP peering (workspace bgp-peering) failed to apply", `"BGP peering failed"`}, notMsg: []string{"10.0.0.1", "clashes"}},
		{name: "apply fails without users: no Event", ws: fakePeering{want: true, applyErr: errors.New("boom")},
			applied: 1, wantErr: "boom"},
		{name: "render fails", ws: fakePeering{renderErr: errors.New(`settings: template bgp requires key "hosts"`)}, users: users,
			wantErr: "requires key", reason: lbcontroller.ReasonPeeringFailed, wantMsg: []string{"failed to render"}, notMsg: []string{"hosts"}},
		{name: "review mode: waits for approval, no failure", ws: fakePeering{want: true, applyErr: fmt.Errorf("wait: %w", workspace.ErrAwaitingApproval)},
			users: users, applied: 1},
		{name: "no bgp, never applied: nothing", ws: fakePeering{}, users: users},
		{name: "no bgp, destroyed already: nothing", ws: fakePeering{st: workspace.Status{Phase: workspace.PhaseDestroyed, AppliedHash: "h0"}}, users: users},
		{name: "bgp removed, Services announce over it: kept", ws: fakePeering{st: appliedPeering}, users: users,
			wantErr: "still in use", reason: lbcontroller.ReasonPeeringKept, wantMsg: []string{"2 Service(s)", "this one among them", "no bgp"}, notMsg: []string{"api", "web"}},
		{name: "bgp removed, Services not listed yet: kept", ws: fakePeering{st: appliedPeering}, usersErr: errors.New("the Services are not listed yet"),
			wantErr: "not listed yet"},
		{name: "bgp removed, no Service uses it: destroyed", ws: fakePeering{st: appliedPeering}, destroyed: 1},
		{name: "bgp removed, the catalog unreadable: nothing destroyed, said", ws: fakePeering{recallErr: errors.New("list the state backend's catalog: pg 10.0.0.9: timeout")}, users: users,
			wantErr: "recall BGP peering workspace bgp-peering: list the state backend's catalog", reason: lbcontroller.ReasonPeeringFailed,
			wantMsg: []string{"failed to recall"}, notMsg: []string{"10.0.0.9", "timeout"}},
		{name: "destroy fails", ws: fakePeering{st: appliedPeering, destroyErr: errors.New("host lb-a unreachable")}, destroyed: 1,
			wantErr: "destroy BGP peering workspace bgp-peering: host lb-a unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := &fakePeeringWS{fakePeering: tc.ws}
			p, events := peeringUnderTest(ws, tc.users, tc.usersErr)
			err := p.reconcile(context.Background())
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("reconcile = %v, want %q", err, tc.wantErr)
			}
			if ws.applies != tc.applied || ws.destroys != tc.destroyed {
				t.Errorf("applied %d destroyed %d, want %d %d", ws.applies, ws.destroys, tc.applied, tc.destroyed)
			}
			got := events()
			if tc.reason == "" {
				if len(got) != 0 {
					t.Errorf("events %v, want none", got)
				}
				return
			}
			if len(got) != len(tc.users) {
				t.Fatalf("events %v, want one per user (%d)", got, len(tc.users))
			}
			for _, e := range got {
				if e.typ != corev1.EventTypeWarning || e.reason != tc.reason {
					t.Errorf("event %+v, want Warning %s", e, tc.reason)
				}
				for _, w := range tc.wantMsg {
					if !strings.Contains(e.msg, w) {
						t.Errorf("event message %q lacks %q", e.msg, w)
					}
				}
				for _, w := range tc.notMsg {
					if strings.Contains(e.msg, w) {
						t.Errorf("event message %q tells the tenant %q", e.msg, w)
					}
				}
			}
			// The same failure again is not told again; a success then a
			// failure is.
			if err := p.reconcile(context.Background()); err == nil {
				t.Fatal("second pass succeeded")
			}
			if again := events(); len(again) != 0 {
				t.Errorf("retry of the same failure told again: %v", again)
			}
		})
	}
}

// TestPeeringRetries: a failed apply is retried with backoff until it
// succeeds, then the facet waits for a change; a change applies again.
func TestPeeringRetries(t *testing.T) {
	ws := &fakePeeringWS{fakePeering: fakePeering{want: true, applyErr: errors.New("ssh: connection refused")}}
	p, _ := peeringUnderTest(ws, nil, nil)
	p.backoff = workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	applied := func() int { ws.mu.Lock(); defer ws.mu.Unlock(); return ws.applies }
	waitFor("3 attempts", func() bool { return applied() >= 3 })
	ws.mu.Lock()
	ws.applyErr = nil
	ws.mu.Unlock()
	waitFor("a success", func() bool { ws.mu.Lock(); defer ws.mu.Unlock(); return ws.st.Phase == workspace.PhaseApplied })
	n := applied()
	time.Sleep(50 * time.Millisecond) // several backoff periods: no retry after a success
	if got := applied(); got != n {
		t.Errorf("applied %d times after the success (was %d): retried without a change", got, n)
	}
	p.changed()
	waitFor("the change applied", func() bool { return applied() == n+1 })
}

// fakeClusterReview records the results handed to review mode.
type fakeClusterReview struct{ ws []string }

func (f *fakeClusterReview) ClusterResult(ws string, _ workspace.Result) { f.ws = append(f.ws, ws) }

// TestPeeringOnResult: the facet claims only the peering workspace's
// results, and hands them to review mode under its name.
func TestPeeringOnResult(t *testing.T) {
	rv := &fakeClusterReview{}
	p := newPeering(&fakePeeringWS{}, rv, nil, nil)
	if p.onResult(templates.RoutesWorkspaceName, workspace.Result{}) || p.onResult("lb-c-0123456789", workspace.Result{}) {
		t.Error("claimed another workspace's result")
	}
	if !p.onResult(templates.PeeringWorkspaceName, workspace.Result{Err: errors.New("x")}) {
		t.Error("did not claim the peering's result")
	}
	if len(rv.ws) != 1 || rv.ws[0] != templates.PeeringWorkspaceName {
		t.Errorf("review got %v", rv.ws)
	}
}

// TestPeeringServicesChanged: a Service change asks for a pass only
// while a destroy waits for the peering's Services to go.
func TestPeeringServicesChanged(t *testing.T) {
	kicked := func(p *peering) bool {
		select {
		case <-p.kick:
			return true
		default:
			return false
		}
	}
	ws := &fakePeeringWS{fakePeering: fakePeering{want: true}}
	p, _ := peeringUnderTest(ws, []*corev1.Service{bgpService("a", "web")}, nil)
	if err := p.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.servicesChanged()
	if kicked(p) {
		t.Error("a Service change asked for a pass while the peering is applied")
	}
	ws.mu.Lock()
	ws.want = false
	ws.mu.Unlock()
	if err := p.reconcile(context.Background()); !errors.Is(err, errPeeringInUse) {
		t.Fatalf("reconcile = %v, want errPeeringInUse", err)
	}
	p.servicesChanged()
	if !kicked(p) {
		t.Error("a Service change did not ask for a pass while the destroy waits")
	}
	var nilPeering *peering
	nilPeering.servicesChanged() // a Cloud without the facet
}
