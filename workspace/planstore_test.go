package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/plans"
)

// memPlans is a PlanStore in memory that keeps plans as JSON, as a store
// that writes them somewhere does.
type memPlans struct {
	mu    sync.Mutex
	plans map[string][]byte
}

var _ plans.Store = (*memPlans)(nil)

func (m *memPlans) SavePlan(_ context.Context, name string, p *plans.Saved) error {
	b, err := json.Marshal(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plans == nil {
		m.plans = map[string][]byte{}
	}
	m.plans[name] = b
	return err
}

func (m *memPlans) LoadPlan(_ context.Context, name string) (*plans.Saved, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.plans[name]
	if !ok {
		return nil, nil
	}
	var p plans.Saved
	return &p, json.Unmarshal(b, &p)
}

func (m *memPlans) DeletePlan(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.plans, name)
	return nil
}

func (m *memPlans) get(t *testing.T, name string) *plans.Saved {
	t.Helper()
	p, err := m.LoadPlan(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gone waits until name's plan is no longer stored and reports whether it
// went. The engine deletes a stored plan after it reports the pass that
// made it obsolete, so a caller that saw the new phase may be a moment
// ahead of the deletion.
func (m *memPlans) gone(t *testing.T, name string) bool {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return m.get(t, name) == nil, nil
	})
	return err == nil
}

// restartModule logs every apply to an absolute path: the work dir does
// not survive the restarts of these tests.
const restartModule = `variable "n" {
  type = number
}

variable "log" {
  type = string
}

resource "terraform_data" "a" {
  input            = var.n
  triggers_replace = var.n
  provisioner "local-exec" {
    command     = "echo \"$N\" >> \"$LOG\""
    environment = { N = var.n, LOG = var.log }
  }
}
`

// restartSpec keeps its state in stateDir, outside the work dir.
func restartSpec(stateDir string, n int) Spec {
	state := filepath.Join(stateDir, "rv.tfstate")
	s := Spec{
		Name: "rv",
		Files: map[string][]byte{
			"main.tf":           []byte(restartModule),
			"backend.tf":        fmt.Appendf(nil, "terraform {\n  backend \"local\" {\n    path = %q\n  }\n}\n", state),
			"tfccm.auto.tfvars": fmt.Appendf(nil, "n   = %d\nlog = %q\n", n, filepath.Join(stateDir, "applied.log")),
		},
		Backend: backends.Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal(state)}},
	}
	s.Hash = s.ContentHash()
	return s
}

// TestReviewPlanSurvivesRestart: a pending plan is kept in the store; an
// engine started on an empty work dir takes it back when the same work is
// submitted, without planning, and an approval of its hash applies it. A
// plan whose state changed meanwhile is refused (ErrStateChanged) and
// planned again; one made for other inputs is dropped.
func TestReviewPlanSurvivesRestart(t *testing.T) {
	stateDir := t.TempDir()
	store := &memPlans{}
	results := make(chan Result, 32)
	onResult := func(_ string, r Result) { results <- r }
	e1, stop1 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Review: true, Plans: store})

	spec := restartSpec(stateDir, 1)
	if _, err := e1.Apply(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e1, spec)
	stored := store.get(t, "rv")
	if stored == nil || stored.Plan.Hash != p.Hash || contentHash(stored.File) != p.Hash {
		t.Fatalf("stored plan %+v: want the pending plan %s with its file", stored, p.Hash)
	}
	if stored.Plan.State == nil || *stored.Plan.State != (plans.StateStamp{}) {
		t.Fatalf("stored plan's state %v: want the empty state", stored.Plan.State)
	}
	stop1()

	// A new process, an empty work dir: the plan is taken back, not made
	// again, and its approval applies it.
	bin, calls := countingBinary(t)
	e2, stop2 := stoppableEngine(t, Options{Binary: bin, WorkDir: t.TempDir(), Review: true, Plans: store, OnResult: onResult})
	st, err := e2.Apply(spec)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != PhaseAwaitingApproval || st.Plan == nil || st.Plan.Hash != p.Hash {
		t.Fatalf("after restart: %+v, want plan %s awaiting approval", st, p.Hash)
	}
	// Published again (the old process may have stopped before it was).
	if r := waitResult(t, results, func(Result) bool { return true }); !r.Restored || !r.AwaitingApproval || r.Plan == nil || r.Plan.Hash != p.Hash {
		t.Fatalf("result after the restart %+v: want the restored plan", r)
	}
	if err := e2.Approve("rv", p.Hash); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e2, spec)
	if n := count(calls(), "plan"); n != 0 {
		t.Errorf("the restored plan was planned again (%d plans)", n)
	}
	if b, _ := os.ReadFile(filepath.Join(stateDir, "applied.log")); string(b) != "1\n" {
		t.Fatalf("applied.log %q, want the approved plan applied once", b)
	}
	if !store.gone(t, "rv") {
		t.Error("the applied plan is still stored")
	}

	// A plan for n=2 is pending when the controller stops; the state
	// then changes (an apply of n=3 by another engine), so after the
	// restart its approval is refused and a new plan replaces it.
	spec2 := restartSpec(stateDir, 2)
	if _, err := e2.Apply(spec2); err != nil {
		t.Fatal(err)
	}
	p2 := awaitPlan(t, e2, spec2)
	if s := store.get(t, "rv"); s == nil || s.Plan.Hash != p2.Hash || s.Plan.State == nil || s.Plan.State.Serial == 0 {
		t.Fatalf("stored plan %+v: want %s with the applied state's stamp", s, p2.Hash)
	}
	stop2()
	other, stopOther := stoppableEngine(t, Options{WorkDir: t.TempDir()})
	waitApplied(t, other, applyNow(t, other, restartSpec(stateDir, 3)))
	stopOther()

	e3, stop3 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Review: true, Plans: store, OnResult: onResult})
	if st, err := e3.Apply(spec2); err != nil || st.Plan == nil || st.Plan.Hash != p2.Hash {
		t.Fatalf("after restart: %+v (%v), want plan %s awaiting approval", st, err, p2.Hash)
	}
	if err := e3.Approve("rv", p2.Hash); err != nil {
		t.Fatal(err)
	}
	refused := waitResult(t, results, func(r Result) bool { return r.Err != nil })
	if !errors.Is(refused.Err, plans.ErrStateChanged) {
		t.Fatalf("approval of a plan whose state changed: %v, want plans.ErrStateChanged", refused.Err)
	}
	p3 := awaitPlan(t, e3, spec2)
	if p3.Hash == p2.Hash || p3.Replaces != p2.Hash {
		t.Fatalf("new plan %s replaces %q: want a new plan replacing %s", p3.Hash, p3.Replaces, p2.Hash)
	}
	// It says what changed: the state (serial 2 then, 3 now), not the inputs.
	if want := fmt.Sprintf("the state changed since it was made (%s, now ", p2.State); !strings.HasPrefix(p3.ReplacedWhy, want) || strings.Contains(p3.ReplacedWhy, "inputs") {
		t.Errorf("the new plan says %q of the plan it replaces, want %q...", p3.ReplacedWhy, want)
	}
	if b, _ := os.ReadFile(filepath.Join(stateDir, "applied.log")); string(b) != "1\n3\n" {
		t.Fatalf("applied.log %q: the refused plan must not apply", b)
	}
	if err := e3.Approve("rv", p3.Hash); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e3, spec2)
	if b, _ := os.ReadFile(filepath.Join(stateDir, "applied.log")); string(b) != "1\n3\n2\n" {
		t.Fatalf("applied.log %q", b)
	}

	stop3()

	// A stored plan for inputs that are no longer wanted is dropped.
	if err := store.SavePlan(context.Background(), "rv", &plans.Saved{Plan: plans.PendingPlan{Hash: p2.Hash, SpecHash: "other"}}); err != nil {
		t.Fatal(err)
	}
	e4, _ := stoppableEngine(t, Options{WorkDir: t.TempDir(), Review: true, Plans: store})
	spec4 := restartSpec(stateDir, 4)
	if _, err := e4.Apply(spec4); err != nil {
		t.Fatal(err)
	}
	if p4 := awaitPlan(t, e4, spec4); p4.Replaces != p2.Hash || p4.ReplacedWhy != "the inputs changed since the plan was made" {
		t.Errorf("plan %s replaces %q (%q), want the dropped plan %s, its inputs changed", p4.Hash, p4.Replaces, p4.ReplacedWhy, p2.Hash)
	}
}

// applyNow submits spec and returns it.
func applyNow(t *testing.T, e *Engine, spec Spec) Spec {
	t.Helper()
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// waitResult returns the first result from ch that ok accepts.
func waitResult(t *testing.T, ch <-chan Result, ok func(Result) bool) Result {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case r := <-ch:
			if ok(r) {
				return r
			}
		case <-deadline:
			t.Fatal("no such result within 2 minutes")
		}
	}
}

// TestDestroyDeletesStoredPlan: a destroy plan kept by an engine in review
// mode (an orphan's, awaiting approval) is deleted by the engine that
// destroys the workspace, also one outside review mode, which never keeps
// plans itself.
func TestDestroyDeletesStoredPlan(t *testing.T) {
	stateDir, work := t.TempDir(), t.TempDir()
	store := &memPlans{}
	spec := restartSpec(stateDir, 1)
	e0, stop0 := stoppableEngine(t, Options{WorkDir: work, Plans: store})
	waitApplied(t, e0, applyNow(t, e0, spec))
	stop0()

	e1, stop1 := stoppableEngine(t, Options{WorkDir: work, Review: true, Plans: store})
	if _, err := e1.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e1, spec)
	stop1()
	if kept := store.get(t, "rv"); kept == nil || kept.Plan.Hash != p.Hash || !kept.Plan.Destroy {
		t.Fatalf("kept plan %+v, want the destroy plan %s", kept, p.Hash)
	}

	e2, _ := stoppableEngine(t, Options{WorkDir: work, Plans: store})
	if _, err := e2.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if st, err := e2.Wait(ctx, spec.Name, spec.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy outside review mode: %+v, %v", st, err)
	}
	if !store.gone(t, "rv") {
		t.Errorf("the destroyed workspace's kept plan %s is still stored", p.Hash)
	}
}
