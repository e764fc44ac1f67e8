package lbcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// fakeLBEngine is the LoadBalancer facet's engine in unit tests: it answers
// Apply/Destroy/Status with the statuses a test sets and records calls.
type fakeLBEngine struct {
	mu       sync.Mutex
	status   workspace.Status // what Status, Apply and Destroy report
	applyErr error
	applied  []workspace.Spec
	destroys []workspace.Spec
	written  *workspace.Spec // what Written returns; nil = not found
	dir      string
	// afterDestroy, when set, is what Destroy reports (and Status after it).
	afterDestroy *workspace.Status
	// dirs is what Workspaces lists.
	dirs []workspace.WorkspaceDir
	// catalog is the state backend's catalog; nil: the backend keeps none.
	catalog map[string]workspace.CatalogEntry
	// settled, when set, is the status after a Wait.
	settled *workspace.Status
	waits   int
}

func (f *fakeLBEngine) Apply(spec workspace.Spec) (workspace.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, spec)
	if f.applyErr != nil {
		return workspace.Status{}, f.applyErr
	}
	return f.withName(spec.Name, spec.Hash), nil
}

func (f *fakeLBEngine) Destroy(spec workspace.Spec) (workspace.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.destroys = append(f.destroys, spec)
	if f.afterDestroy != nil {
		f.status = *f.afterDestroy
	}
	return f.withName(spec.Name, spec.Hash), nil
}

func (f *fakeLBEngine) Status(name string) workspace.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.withName(name, f.status.Hash)
}

// appliedFiles returns main.tf of every spec applied so far.
func (f *fakeLBEngine) appliedFiles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.applied {
		out = append(out, string(s.Files["main.tf"]))
	}
	return out
}

// Wait reports the status; with waitSettles it first moves work in flight
// to settled (the engine finishing within the wait).
func (f *fakeLBEngine) Wait(ctx context.Context, name, hash string) (workspace.Status, error) {
	f.mu.Lock()
	f.waits++
	settled := f.settled
	f.mu.Unlock()
	if settled == nil { // nothing finishes: block like the engine until ctx ends
		<-ctx.Done()
		return f.Status(name), ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = *settled
	return f.withName(name, hash), nil
}

func (f *fakeLBEngine) Workspaces() ([]workspace.WorkspaceDir, error) { return f.dirs, nil }

func (f *fakeLBEngine) Catalogued(context.Context) ([]string, error) {
	if f.catalog == nil {
		return nil, workspace.ErrNoCatalog
	}
	names := make([]string, 0, len(f.catalog))
	for n := range f.catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (f *fakeLBEngine) CatalogEntry(_ context.Context, name string) (workspace.CatalogEntry, error) {
	e, ok := f.catalog[name]
	if !ok {
		return workspace.CatalogEntry{}, workspace.ErrNotFound
	}
	return e, nil
}

// Revive answers like the engine: false while a destroy is to run or running.
func (f *fakeLBEngine) Revive(name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status.Destroy && f.status.Phase != workspace.PhaseDestroyed {
		return false, nil
	}
	return true, nil
}

func (f *fakeLBEngine) Written(name string) (workspace.Spec, error) {
	if f.written == nil {
		return workspace.Spec{}, workspace.ErrNotFound
	}
	return *f.written, nil
}

func (f *fakeLBEngine) Dir(name string) string {
	if f.dir == "" {
		return filepath.Join("/nonexistent", name)
	}
	return f.dir
}

func (f *fakeLBEngine) withName(name, hash string) workspace.Status {
	st := f.status
	st.Name = name
	if st.Hash == "" {
		st.Hash = hash
	}
	return st
}

// fakeRenderer renders every Service to a one-file workspace named after
// its UID, or fails with err.
type fakeRenderer struct{ err error }

func (r fakeRenderer) RenderLoadBalancer(svc *corev1.Service, nodes []*corev1.Node) (*workspace.Spec, error) {
	if r.err != nil {
		return nil, r.err
	}
	content := "# " + svc.Name
	for _, k := range slices.Sorted(maps.Keys(svc.Labels)) {
		content += " label " + k + "=" + svc.Labels[k]
	}
	for _, n := range nodes {
		content += " node " + n.Name + "="
		for _, a := range n.Status.Addresses {
			content += a.Address
		}
	}
	spec := &workspace.Spec{Name: r.WorkspaceName(svc), Files: map[string][]byte{"main.tf": []byte(content)}}
	spec.Hash = spec.ContentHash()
	return spec, nil
}

func (r fakeRenderer) RenderRoutes([]templates.Route) (*workspace.Spec, error) {
	return nil, errors.New("no routes")
}
func (fakeRenderer) LoadBalancerName(svc *corev1.Service) string { return "lb-" + svc.Name }
func (fakeRenderer) WorkspaceName(svc *corev1.Service) string    { return "lb-c-" + string(svc.UID) }
func (fakeRenderer) IsLoadBalancerWorkspace(name string) bool {
	return strings.HasPrefix(name, "lb-c-")
}
func (fakeRenderer) WithBackend(spec workspace.Spec) (workspace.Spec, error) {
	spec.Backend, spec.StateWorkspace = backends.Info{Type: "local"}, "default"
	return spec, nil
}

type recordedEvent struct{ eventType, reason, message string }

func newPhaseTest(eng *fakeLBEngine, render renderer) (*loadBalancers, *[]recordedEvent) {
	var events []recordedEvent
	l := newLoadBalancers(eng, render, nil, func(_ runtime.Object, eventType, reason, message string) {
		events = append(events, recordedEvent{eventType, reason, message})
	}, false, 0)
	return l, &events
}

func phaseService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("u1")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
}

func ingressOutputs(raw string) map[string]json.RawMessage {
	return map[string]json.RawMessage{"ingress": json.RawMessage(raw)}
}

func retryAfterOf(t *testing.T, err error) time.Duration {
	t.Helper()
	var re *api.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want an api.RetryError", err)
	}
	return re.RetryAfter()
}

func TestEnsureLoadBalancerPhases(t *testing.T) {
	next := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		status     workspace.Status
		render     renderer
		applyErr   error
		wantIP     string
		wantRetry  time.Duration // > 0: an api.RetryError with this delay
		wantErr    string
		wantEvent  string // reason of the one Event expected ("" = none)
		wantApplys int
	}{
		{name: "in flight", status: workspace.Status{Phase: workspace.PhaseRunning}, wantRetry: inFlightRetry, wantErr: "being planned and applied", wantApplys: 1},
		{name: "queued", status: workspace.Status{Phase: workspace.PhasePending}, wantRetry: inFlightRetry, wantErr: "waiting to be applied", wantApplys: 1},
		// A refused input: tfccm's Warning (from the result, or the
		// render's) is the one; the service controller's no-op answer
		// adds none and does not retry (refusedOnce).
		{name: "invalid input", status: workspace.Status{Phase: workspace.PhaseFailed, Err: &tofu.Error{Op: "plan", Summary: "Invalid value for variable", Invalid: true}}, wantErr: cloudprovider.ImplementedElsewhere.Error(), wantApplys: 1},
		{name: "failed", status: workspace.Status{Phase: workspace.PhaseFailed, Err: errors.New("plan: boom"), NextRetry: next}, wantErr: "plan: boom (next retry 2026-11-23T10:00:00Z)", wantApplys: 1},
		{name: "applied", status: workspace.Status{Phase: workspace.PhaseApplied, Hash: "h", AppliedHash: "h", Outputs: ingressOutputs(`[{"ip":"10.0.0.5","ip_mode":"VIP"}]`)}, wantIP: "10.0.0.5", wantApplys: 1},
		{name: "older content applied", status: workspace.Status{Phase: workspace.PhaseApplied, Hash: "new", AppliedHash: "old", Outputs: ingressOutputs(`[{"ip":"10.0.0.5"}]`)}, wantRetry: inFlightRetry, wantApplys: 1},
		{name: "applied with bad ingress", status: workspace.Status{Phase: workspace.PhaseApplied, Hash: "h", AppliedHash: "h", Outputs: ingressOutputs(`[{"ip":"nope"}]`)}, wantErr: "is not an IP address", wantEvent: ReasonInvalidIngress, wantApplys: 1},
		// No error the service controller would record as a Warning at
		// every retry: its documented no-op; the approval calls again.
		{name: "awaiting approval", status: workspace.Status{Phase: workspace.PhaseAwaitingApproval, Plan: &plans.PendingPlan{Hash: "abc"}}, wantErr: cloudprovider.ImplementedElsewhere.Error(), wantApplys: 1},
		{name: "drift repair awaiting approval keeps serving", status: workspace.Status{Phase: workspace.PhaseAwaitingApproval, Hash: "h", AppliedHash: "h", Outputs: ingressOutputs(`[{"hostname":"lb.example"}]`), Plan: &plans.PendingPlan{Hash: "abc"}}, wantApplys: 1},
		{name: "render fails", render: fakeRenderer{err: errors.New("annotation tfccm.io/vars: not valid JSON")}, wantErr: cloudprovider.ImplementedElsewhere.Error(), wantEvent: ReasonRenderFailed},
		{name: "submit fails", applyErr: errors.New("engine stopped"), wantErr: "submit load balancer lb-c-u1: engine stopped", wantEvent: ReasonApplyFailed, wantApplys: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeLBEngine{status: tc.status, applyErr: tc.applyErr}
			render := tc.render
			if render == nil {
				render = fakeRenderer{}
			}
			l, events := newPhaseTest(eng, render)
			status, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil)
			if len(eng.applied) != tc.wantApplys {
				t.Errorf("%d applies, want %d", len(eng.applied), tc.wantApplys)
			}
			switch {
			case tc.wantRetry > 0:
				if got := retryAfterOf(t, err); got != tc.wantRetry {
					t.Errorf("retry after %v, want %v", got, tc.wantRetry)
				}
			case tc.wantErr != "":
				var re *api.RetryError
				if errors.As(err, &re) {
					t.Errorf("err %v is a RetryError; want a failure", err)
				}
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && tc.wantRetry == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if len(status.Ingress) != 1 || status.Ingress[0].IP != tc.wantIP {
					t.Errorf("status = %+v, want ip %q", status.Ingress, tc.wantIP)
				}
			}
			if got := reasons(*events); got != tc.wantEvent {
				t.Errorf("events %q, want %q", got, tc.wantEvent)
			}
		})
	}
}

func TestEnsureLoadBalancerDeletedPhases(t *testing.T) {
	written := &workspace.Spec{Name: "lb-c-u1", Files: map[string][]byte{"main.tf": []byte("# as last written")}}
	for _, tc := range []struct {
		name         string
		status       workspace.Status
		afterDestroy *workspace.Status // nil: Destroy reports status
		render       renderer
		written      *workspace.Spec
		wantDestroys int
		wantRetry    time.Duration
		wantErr      string
		wantEvent    string
		wantFile     string // content of main.tf in the destroyed spec
	}{
		{name: "already destroyed", status: workspace.Status{Phase: workspace.PhaseDestroyed}},
		{name: "destroyed now", status: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h"}, afterDestroy: &workspace.Status{Phase: workspace.PhaseDestroyed}, wantDestroys: 1, wantFile: "# web"},
		{name: "destroy in flight", status: workspace.Status{Phase: workspace.PhaseRunning, Destroy: true}, wantDestroys: 1, wantRetry: inFlightRetry, wantErr: "being destroyed", wantFile: "# web"},
		{name: "destroy failed", status: workspace.Status{Phase: workspace.PhaseFailed, Err: errors.New("destroy: denied")}, wantDestroys: 1, wantErr: "destroy load balancer lb-c-u1: destroy: denied", wantFile: "# web"},
		{name: "destroy awaiting approval", status: workspace.Status{Phase: workspace.PhaseAwaitingApproval, Destroy: true, Plan: &plans.PendingPlan{Hash: "d", Destroy: true}}, wantDestroys: 1, wantRetry: awaitingRetry, wantFile: "# web"},
		{name: "no longer renders: last written destroyed", status: workspace.Status{Phase: workspace.PhaseRunning, Destroy: true}, render: fakeRenderer{err: errors.New("bad annotation")}, written: written, wantDestroys: 1, wantRetry: inFlightRetry, wantFile: "# as last written"},
		{name: "no longer renders and nothing written", status: workspace.Status{Phase: workspace.PhaseApplied}, render: fakeRenderer{err: errors.New("bad annotation")}, wantErr: "render failed (bad annotation)", wantEvent: ReasonDestroyFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeLBEngine{status: tc.status, written: tc.written, afterDestroy: tc.afterDestroy}
			render := tc.render
			if render == nil {
				render = fakeRenderer{}
			}
			l, events := newPhaseTest(eng, render)
			err := l.EnsureLoadBalancerDeleted(context.Background(), "c", phaseService())
			if len(eng.destroys) != tc.wantDestroys {
				t.Fatalf("%d destroys, want %d", len(eng.destroys), tc.wantDestroys)
			}
			if tc.wantFile != "" {
				d := eng.destroys[0]
				if got := string(d.Files["main.tf"]); got != tc.wantFile {
					t.Errorf("destroyed main.tf %q, want %q", got, tc.wantFile)
				}
				if d.Hash == "" || d.Backend.Type == "" && tc.written != nil {
					t.Errorf("destroyed spec lacks hash or backend: %+v", d)
				}
			}
			if tc.wantRetry > 0 {
				if got := retryAfterOf(t, err); got != tc.wantRetry {
					t.Errorf("retry after %v, want %v", got, tc.wantRetry)
				}
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && tc.wantRetry == 0 && err != nil:
				t.Fatalf("err = %v, want nil (finalizer released)", err)
			}
			if got := reasons(*events); got != tc.wantEvent {
				t.Errorf("events %q, want %q", got, tc.wantEvent)
			}
		})
	}
}

func TestGetLoadBalancerExists(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name          string
		status        workspace.Status
		dir           string
		remoteBackend bool
		wantExists    bool
		wantIP        string
	}{
		{name: "never seen", wantExists: false},
		{name: "destroyed", status: workspace.Status{Phase: workspace.PhaseDestroyed}, remoteBackend: true, wantExists: false},
		{name: "applied", status: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h", Outputs: ingressOutputs(`[{"ip":"10.0.0.7"}]`)}, wantExists: true, wantIP: "10.0.0.7"},
		{name: "in flight", status: workspace.Status{Phase: workspace.PhaseRunning}, wantExists: true},
		{name: "directory of an earlier incarnation", dir: dir, wantExists: true},
		{name: "remote backend may hold state", remoteBackend: true, wantExists: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeLBEngine{status: tc.status, dir: tc.dir}
			l, _ := newPhaseTest(eng, fakeRenderer{})
			l.remoteBackend = tc.remoteBackend
			status, exists, err := l.GetLoadBalancer(context.Background(), "c", phaseService())
			if err != nil {
				t.Fatal(err)
			}
			if exists != tc.wantExists {
				t.Fatalf("exists = %v, want %v", exists, tc.wantExists)
			}
			if tc.wantIP != "" && (status == nil || len(status.Ingress) != 1 || status.Ingress[0].IP != tc.wantIP) {
				t.Errorf("status = %+v, want %s", status, tc.wantIP)
			}
		})
	}
}

// TestLoadBalancerResults: an engine result becomes one Event on the
// Service whose workspace it is; results of unknown workspaces are not
// claimed.
func TestLoadBalancerResults(t *testing.T) {
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, events := newPhaseTest(eng, fakeRenderer{})
	if l.onResult("lb-c-u1", workspace.Result{Op: "apply", Changed: true}) {
		t.Fatal("result of a workspace no Service submitted was claimed")
	}
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil); err == nil {
		t.Fatal("in-flight Ensure returned no error")
	}
	for _, r := range []workspace.Result{
		{Op: "apply", Changed: true},
		{Op: "plan", Err: errors.New("plan: x"), Attempt: 2},
		{Op: "apply", Drift: true}, // re-planned, nothing drifted: no Event
	} {
		if !l.onResult("lb-c-u1", r) {
			t.Fatalf("result %+v not claimed", r)
		}
	}
	if got := reasons(*events); got != ReasonApplied+","+ReasonApplyFailed {
		t.Errorf("events %q", got)
	}
	if err := l.EnsureLoadBalancerDeleted(context.Background(), "c", phaseService()); err == nil {
		t.Fatal("in-flight destroy returned no error")
	}
	eng.status = workspace.Status{Phase: workspace.PhaseDestroyed}
	if err := l.EnsureLoadBalancerDeleted(context.Background(), "c", phaseService()); err != nil {
		t.Fatal(err)
	}
	if l.onResult("lb-c-u1", workspace.Result{Op: "destroy"}) {
		t.Error("a deleted Service's workspace result was still claimed")
	}
}

func reasons(events []recordedEvent) string {
	var out []string
	for _, e := range events {
		out = append(out, e.reason)
	}
	return strings.Join(out, ",")
}

// TestEnsureWaitsForWorkInFlight: with ensure_wait set, a change the
// engine finishes within the wait answers with the status (no RetryError,
// so no Warning from the service controller); one that does not finish
// still answers RetryError; a failure is not waited for.
func TestEnsureWaitsForWorkInFlight(t *testing.T) {
	applied := &workspace.Status{Phase: workspace.PhaseApplied, Hash: "h", AppliedHash: "h", Outputs: ingressOutputs(`[{"ip":"10.0.0.9"}]`)}
	destroyed := &workspace.Status{Phase: workspace.PhaseDestroyed}
	for _, tc := range []struct {
		name      string
		status    workspace.Status
		settled   *workspace.Status
		wait      time.Duration
		wantWaits int
		wantIP    string
	}{
		{name: "finishes within the wait", status: workspace.Status{Phase: workspace.PhaseRunning, Hash: "h"}, settled: applied, wait: time.Second, wantWaits: 1, wantIP: "10.0.0.9"},
		{name: "still running", status: workspace.Status{Phase: workspace.PhaseRunning, Hash: "h"}, wait: time.Second, wantWaits: 1},
		{name: "waiting disabled", status: workspace.Status{Phase: workspace.PhaseRunning, Hash: "h"}, settled: applied, wait: 0, wantWaits: 0},
		{name: "failed is not waited for", status: workspace.Status{Phase: workspace.PhaseFailed, Err: errors.New("x")}, settled: applied, wait: time.Second, wantWaits: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeLBEngine{status: tc.status, settled: tc.settled}
			l, _ := newPhaseTest(eng, fakeRenderer{})
			l.ensureWait = tc.wait
			status, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil)
			if eng.waits != tc.wantWaits {
				t.Errorf("%d waits, want %d", eng.waits, tc.wantWaits)
			}
			if tc.wantIP != "" {
				if err != nil || len(status.Ingress) != 1 || status.Ingress[0].IP != tc.wantIP {
					t.Fatalf("status %+v, err %v; want %s", status, err, tc.wantIP)
				}
			} else if err == nil {
				t.Fatal("no error while work is in flight or failed")
			}
		})
	}
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h"}, afterDestroy: &workspace.Status{Phase: workspace.PhaseRunning, Destroy: true}, settled: destroyed}
	l, _ := newPhaseTest(eng, fakeRenderer{})
	l.ensureWait = time.Second
	if err := l.EnsureLoadBalancerDeleted(context.Background(), "c", phaseService()); err != nil || eng.waits != 1 {
		t.Fatalf("delete finished within the wait: err %v, %d waits", err, eng.waits)
	}
}

// TestEnsureLoadBalancerOnInstancesOnlySet: a Service on a built-in set
// without load balancer modules (proxmox, vsphere) is not applied; it gets
// one Warning Event saying why and what to do, and the service controller
// its no-op answer (no second Warning).
func TestEnsureLoadBalancerOnInstancesOnlySet(t *testing.T) {
	for _, set := range []string{"proxmox", "vsphere"} {
		t.Run(set, func(t *testing.T) {
			cfg, err := config.Parse(fmt.Appendf(nil, "cluster_name = \"c\"\nwork_dir = %q\ntemplate_set = %q\n", t.TempDir(), set), "cloud.conf")
			if err != nil {
				t.Fatal(err)
			}
			loader, err := templates.NewLoader(cfg)
			if err != nil {
				t.Fatal(err)
			}
			eng := &fakeLBEngine{}
			l, events := newPhaseTest(eng, templateRenderer{cfg: cfg, loader: loader})
			_, err = l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil)
			const want = "the template set has no load balancer module (its cloud has no load balancer product)"
			if err != cloudprovider.ImplementedElsewhere {
				t.Fatalf("err = %v, want cloudprovider.ImplementedElsewhere", err)
			}
			if len(eng.applied) != 0 {
				t.Errorf("%d applies, want none", len(eng.applied))
			}
			if len(*events) != 1 || (*events)[0].reason != ReasonRenderFailed || !strings.Contains((*events)[0].message, want) {
				t.Errorf("events %+v, want one %s naming the missing module", *events, ReasonRenderFailed)
			}
		})
	}
}

// TestEnsureAfterTypeChangeRevives: a Service whose load balancer was
// destroyed because its type changed gets one again once it is of type
// LoadBalancer again (the way its class changes), not while the destroy
// still runs; UpdateLoadBalancer (a node change racing the destroy) never
// brings it back.
func TestEnsureAfterTypeChangeRevives(t *testing.T) {
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h"},
		afterDestroy: &workspace.Status{Phase: workspace.PhaseRunning, Destroy: true}}
	l, _ := newPhaseTest(eng, fakeRenderer{})
	svc := phaseService()
	nodePort := svc.DeepCopy()
	nodePort.Spec.Type = corev1.ServiceTypeNodePort
	if err := l.EnsureLoadBalancerDeleted(context.Background(), "c", nodePort); retryAfterOf(t, err) != inFlightRetry {
		t.Fatalf("delete: %v", err)
	}
	if err := l.UpdateLoadBalancer(context.Background(), "c", svc, nil); err != nil || len(eng.applied) != 0 {
		t.Fatalf("update racing the destroy: %v, %d applies", err, len(eng.applied))
	}
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", svc, nil); !strings.Contains(fmt.Sprint(err), "still being destroyed") || len(eng.applied) != 0 {
		t.Fatalf("ensure while destroying: %v, %d applies", err, len(eng.applied))
	}
	eng.mu.Lock()
	eng.status = workspace.Status{Phase: workspace.PhaseDestroyed, Destroy: true}
	eng.mu.Unlock()
	if err := l.EnsureLoadBalancerDeleted(context.Background(), "c", nodePort); err != nil {
		t.Fatalf("delete once destroyed: %v", err)
	}
	eng.mu.Lock()
	eng.status = workspace.Status{Phase: workspace.PhaseApplied, Hash: "", AppliedHash: ""}
	eng.mu.Unlock()
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", svc, nil); len(eng.applied) != 1 {
		t.Fatalf("ensure after the destroy: %v, %d applies, want 1", err, len(eng.applied))
	}
	deleting := svc.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	l.markDeleted(l.render.WorkspaceName(svc), deleting)
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", deleting, nil); err == nil || len(eng.applied) != 1 {
		t.Errorf("ensure of a deleted Service: %v, %d applies, want an error and none", err, len(eng.applied))
	}
}

// TestDestroyedEventAfterSettledDelete: the destroy's result may reach
// onResult after EnsureLoadBalancerDeleted saw the workspace destroyed and
// returned; its TerraformDestroyed Event still reaches the Service.
func TestDestroyedEventAfterSettledDelete(t *testing.T) {
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h"},
		afterDestroy: &workspace.Status{Phase: workspace.PhaseRunning, Destroy: true},
		settled:      &workspace.Status{Phase: workspace.PhaseDestroyed, Destroy: true}}
	var events []recordedEvent
	l := newLoadBalancers(eng, fakeRenderer{}, nil, func(_ runtime.Object, eventType, reason, message string) {
		events = append(events, recordedEvent{eventType, reason, message})
	}, false, time.Minute)
	svc := phaseService()
	if err := l.EnsureLoadBalancerDeleted(context.Background(), "c", svc); err != nil {
		t.Fatal(err)
	}
	name := l.render.WorkspaceName(svc)
	if !l.onResult(name, workspace.Result{Op: "destroy", Changed: true}) {
		t.Fatal("the destroy's result found no Service")
	}
	if got := reasons(events); got != ReasonDestroyed {
		t.Errorf("events %q, want %s", got, ReasonDestroyed)
	}
	if l.serviceOf(name) != nil {
		t.Error("the destroyed workspace's entry is kept after its result")
	}
}
