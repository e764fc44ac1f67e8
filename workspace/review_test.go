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

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/plans"
)

// reviewModule has a sensitive attribute (from a sensitive variable), a
// sensitive output, and a destroy-time provisioner that marks the disk.
const reviewModule = `variable "n" {
  type = number
}

variable "token" {
  type      = string
  sensitive = true
}

resource "terraform_data" "a" {
  input = { n = var.n, token = var.token }
  provisioner "local-exec" {
    command     = "echo \"$N\" >> \"$LOG\""
    environment = { N = var.n, LOG = "${path.module}/../applied.log" }
  }
  provisioner "local-exec" {
    when        = destroy
    command     = "echo destroyed > \"$MARK\""
    environment = { MARK = "${path.module}/../destroyed.mark" }
  }
}

output "n" {
  value = var.n
}

output "secret" {
  value     = "pw-${var.n}-hush"
  sensitive = true
}
`

func reviewSpec(n int) Spec {
	s := Spec{Name: "rv", Files: map[string][]byte{
		"main.tf":           []byte(reviewModule),
		"tfccm.auto.tfvars": []byte(fmt.Sprintf("n     = %d\ntoken = \"tok-%d-zzsecret\"\n", n, n)),
	}}
	s.Hash = s.ContentHash()
	return s
}

// awaitPlan waits until spec's plan awaits approval and returns it.
func awaitPlan(t *testing.T, e *Engine, spec Spec) *plans.PendingPlan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.Hash)
	if !errors.Is(err, ErrAwaitingApproval) {
		t.Fatalf("wait for plan: %v (status %+v)", err, st)
	}
	if st.Phase != PhaseAwaitingApproval || st.Plan == nil {
		t.Fatalf("status %+v: want AwaitingApproval with a plan", st)
	}
	return st.Plan
}

func applyLog(t *testing.T, work string) string {
	b, err := os.ReadFile(filepath.Join(work, "applied.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestReviewWaitsForTheExactPlan(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	resCh := make(chan Result, 16)
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work, Review: true, OnResult: func(_ string, r Result) { resCh <- r }})

	spec := reviewSpec(1)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e, spec)
	if n := count(calls(), "apply"); n != 0 {
		t.Fatalf("tofu apply ran %d times before approval", n)
	}
	if got := applyLog(t, work); got != "" {
		t.Fatalf("resources created before approval: %q", got)
	}
	if got, want := p.Summary(), "1 to add, 0 to change, 0 to destroy"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	saved, err := fileHash(filepath.Join(e.Dir("rv"), planFile))
	if err != nil || saved != p.Hash || len(p.Hash) != 64 {
		t.Fatalf("plan hash %q, saved plan file hash %q (%v)", p.Hash, saved, err)
	}
	if !strings.Contains(p.Text, "terraform_data.a") || !strings.Contains(p.Text, "1 to add") {
		t.Errorf("published text lacks the change:\n%s", p.Text)
	}
	var pub plans.Published
	if err := json.Unmarshal(p.JSON, &pub); err != nil {
		t.Fatalf("published JSON: %v", err)
	}
	if pub.PlanHash != p.Hash || len(pub.ResourceChanges) != 1 || pub.ResourceChanges[0].Address != "terraform_data.a" {
		t.Errorf("published JSON %s", p.JSON)
	}
	// The unredacted part is still there: n = 1.
	after, _ := pub.ResourceChanges[0].After.(map[string]any)
	input, _ := after["input"].(map[string]any)
	if input["n"] != float64(1) || input["token"] != secret.Placeholder {
		t.Errorf("resource after = %v: want n=1 and the token redacted", after)
	}
	// No secret in anything published: status, files.
	txt, _ := os.ReadFile(filepath.Join(e.Dir("rv"), planTextFile))
	js, _ := os.ReadFile(filepath.Join(e.Dir("rv"), planJSONFile))
	if len(txt) == 0 || len(js) == 0 {
		t.Fatal("published files missing")
	}
	for what, s := range map[string]string{"text": p.Text, "json": string(p.JSON), "plan.txt": string(txt), "plan.json": string(js)} {
		for _, secret := range []string{"zzsecret", "hush"} {
			if strings.Contains(s, secret) {
				t.Errorf("published %s contains the sensitive value %q", what, secret)
			}
		}
	}
	select {
	case r := <-resCh:
		if !r.AwaitingApproval || r.Plan == nil || r.Plan.Hash != p.Hash || r.Err != nil {
			t.Errorf("OnResult %+v: want AwaitingApproval with the plan", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnResult for the pending plan")
	}

	// A wrong hash is refused and changes nothing.
	if err := e.Approve("rv", strings.Repeat("0", 64)); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("wrong hash: %v, want ErrPlanMismatch", err)
	}
	if err := e.Approve("other", p.Hash); !errors.Is(err, ErrNoPendingPlan) {
		t.Fatalf("unknown workspace: %v, want ErrNoPendingPlan", err)
	}
	if st := e.Status("rv"); st.Phase != PhaseAwaitingApproval || count(calls(), "apply") != 0 {
		t.Fatalf("after a refused approval: %+v, %d applies", st, count(calls(), "apply"))
	}

	plans := count(calls(), "plan")
	if err := e.Approve("rv", p.Hash); err != nil {
		t.Fatal(err)
	}
	if err := e.Approve("rv", p.Hash); err != nil {
		t.Fatalf("repeated approval: %v", err)
	}
	st := waitApplied(t, e, spec)
	if n := count(calls(), "apply"); n != 1 {
		t.Errorf("tofu apply ran %d times, want 1", n)
	}
	if err := e.Approve("rv", p.Hash); !errors.Is(err, ErrAlreadyApplied) {
		t.Errorf("approving the applied plan again = %v, want ErrAlreadyApplied", err)
	}
	if n := count(calls(), "plan"); n != plans {
		t.Errorf("approval re-planned (%d plans, want %d): the saved plan must be applied", n, plans)
	}
	if got := applyLog(t, work); got != "1\n" {
		t.Errorf("applied.log %q", got)
	}
	if string(st.Outputs["n"]) != "1" || string(st.Outputs["secret"]) != string(SensitiveValue) {
		t.Errorf("outputs %v", st.Outputs)
	}
	if st.Plan != nil {
		t.Errorf("applied status still carries a plan")
	}
	for _, f := range []string{planFile, planTextFile, planJSONFile} {
		if _, err := os.Stat(filepath.Join(e.Dir("rv"), f)); !os.IsNotExist(err) {
			t.Errorf("%s left after apply: %v", f, err)
		}
	}
	// Re-planning what is applied finds no changes: no approval needed.
	// The drift pass's OnResult comes after the engine settled it (the
	// approved apply's result may still be queued before it).
	e.Reconcile("rv")
	drift := awaitDriftResult(t, resCh)
	if drift.AwaitingApproval || drift.Changed || drift.Err != nil {
		t.Errorf("no-change re-plan reported %+v", drift)
	}
	if n := count(calls(), "plan"); n != plans+1 {
		t.Errorf("drift check ran %d plans, want 1", n-plans)
	}
	if st := e.Status("rv"); st.Phase != PhaseApplied || count(calls(), "apply") != 1 {
		t.Errorf("no-change re-plan: %+v, %d applies", st, count(calls(), "apply"))
	}
}

// awaitDriftResult returns the next drift check's Result from results,
// skipping the other passes' ones.
func awaitDriftResult(t *testing.T, results <-chan Result) Result {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case r := <-results:
			if r.Drift {
				return r
			}
		case <-timeout:
			t.Fatal("no OnResult for the drift check")
		}
	}
}

func TestReviewNewSpecReplacesPendingPlan(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work, Review: true})
	s1, s2 := reviewSpec(1), reviewSpec(2)
	if _, err := e.Apply(s1); err != nil {
		t.Fatal(err)
	}
	p1 := awaitPlan(t, e, s1)
	if _, err := e.Apply(s1); err != nil { // the same spec again keeps the plan
		t.Fatal(err)
	}
	if st := e.Status("rv"); st.Phase != PhaseAwaitingApproval || st.Plan == nil || st.Plan.Hash != p1.Hash {
		t.Fatalf("resubmitting the same spec replaced the plan: %+v", st)
	}
	if _, err := e.Apply(s2); err != nil {
		t.Fatal(err)
	}
	p2 := awaitPlan(t, e, s2)
	if p2.Hash == p1.Hash {
		t.Fatal("a new spec kept the old plan hash")
	}
	if err := e.Approve("rv", p1.Hash); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("stale hash: %v, want ErrPlanMismatch", err)
	}
	if n := count(calls(), "apply"); n != 0 {
		t.Fatalf("%d applies before approval", n)
	}
	if err := e.Approve("rv", p2.Hash); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, s2)
	if string(st.Outputs["n"]) != "2" || applyLog(t, work) != "2\n" {
		t.Errorf("applied %v, log %q: want exactly spec 2", st.Outputs, applyLog(t, work))
	}
}

func TestReviewDestroyNeedsApproval(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work, Review: true})
	spec := reviewSpec(3)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	if err := e.Approve("rv", awaitPlan(t, e, spec).Hash); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)

	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e, spec)
	if !p.Destroy || p.Summary() != "0 to add, 0 to change, 1 to destroy" {
		t.Errorf("destroy plan %+v (%s)", p, p.Summary())
	}
	mark := filepath.Join(work, "destroyed.mark")
	if _, err := os.Stat(mark); !os.IsNotExist(err) || count(calls(), "destroy") != 0 {
		t.Fatalf("destroyed before approval (mark: %v)", err)
	}
	if _, err := os.Stat(e.Dir("rv")); err != nil {
		t.Fatalf("workspace removed before approval: %v", err)
	}
	if strings.Contains(p.Text, "zzsecret") || strings.Contains(string(p.JSON), "zzsecret") {
		t.Logf("text:\n%s\njson:\n%s", p.Text, p.JSON)
		t.Error("destroy plan publishes the sensitive value")
	}
	if err := e.Approve("rv", p.Hash); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, "rv", spec.Hash)
	if err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy after approval: %v, %+v", err, st)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("destroy provisioner did not run: %v", err)
	}
	if _, err := os.Stat(e.Dir("rv")); !os.IsNotExist(err) {
		t.Errorf("workspace dir left: %v", err)
	}
}

// TestReviewTamperedPlanIsNotApplied: the approval names the saved plan's
// bytes; a plan file changed on disk after approval is not applied.
func TestReviewTamperedPlanIsNotApplied(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work, Review: true, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}})
	spec := reviewSpec(4)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e, spec)
	f, err := os.OpenFile(filepath.Join(e.Dir("rv"), planFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := e.Approve("rv", p.Hash); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, "rv", spec.Hash)
	if err == nil || st.Phase != PhaseFailed || !strings.Contains(err.Error(), "no longer saved") {
		t.Fatalf("tampered plan: %v, %+v", err, st)
	}
	if n := count(calls(), "apply"); n != 0 || applyLog(t, work) != "" {
		t.Fatalf("a tampered plan was applied (%d applies)", n)
	}
}

// blockingBinary is countingBinary whose commands in workspace dir
// "blocker" wait while work/block exists: with one worker, it holds the
// queue so that a test can act between an approval and its run.
func blockingBinary(t *testing.T, work string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tofu-blocking")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$(basename \"$PWD\")\" = blocker ]; then while [ -e '%s/block' ]; do sleep 0.05; done; fi\nexec '%s' \"$@\"\n", work, repo.Tofu(t))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// awaitStatus polls the workspace's status until cond holds.
func awaitStatus(t *testing.T, e *Engine, name, what string, cond func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := e.Status(name)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReviewDriftRepairApproval: a drift repair in review mode waits for
// approval; re-rendering the applied inputs (which the approval itself
// does) keeps it, before and after the approval, and the approved repair
// runs exactly that plan. New inputs replace a pending repair with a new
// plan that names the one it replaced.
func TestReviewDriftRepairApproval(t *testing.T) {
	work := t.TempDir()
	var mu sync.Mutex
	var results []Result
	e := newTestEngine(t, Options{Binary: blockingBinary(t, work), WorkDir: work, Review: true, Parallelism: 1,
		OnResult: func(_ string, r Result) {
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		}})
	s1 := reviewSpec(1)
	if _, err := e.Apply(s1); err != nil {
		t.Fatal(err)
	}
	if err := e.Approve("rv", awaitPlan(t, e, s1).Hash); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, s1)
	drift := func() *plans.PendingPlan {
		t.Helper()
		stateRm(t, e.Dir("rv"), "terraform_data.a")
		e.Reconcile("rv")
		st := awaitStatus(t, e, "rv", "drift repair awaiting approval", func(s Status) bool {
			return s.Phase == PhaseAwaitingApproval && s.Plan != nil
		})
		if !st.Plan.Drift || st.Plan.SpecHash != s1.Hash || st.AppliedHash != s1.Hash {
			t.Fatalf("pending plan %+v (status %+v): want a drift repair of the applied inputs", st.Plan, st)
		}
		return st.Plan
	}
	repair := drift()

	// Re-renders of the applied inputs keep the pending repair, also
	// once it is approved and waits for the (busy) worker.
	if _, err := e.Apply(s1); err != nil {
		t.Fatal(err)
	}
	if st := e.Status("rv"); st.Phase != PhaseAwaitingApproval || st.Plan == nil || st.Plan.Hash != repair.Hash {
		t.Fatalf("a re-render replaced the pending drift repair: %+v", st)
	}
	if err := os.WriteFile(filepath.Join(work, "block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := Spec{Name: "blocker", Files: map[string][]byte{"main.tf": []byte(`resource "terraform_data" "x" {}`)}}
	if _, err := e.Apply(blocker); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, e, "blocker", "the blocker runs", func(s Status) bool { return s.Phase == PhaseRunning })
	if err := e.Approve("rv", repair.Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(s1); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(work, "block")); err != nil {
		t.Fatal(err)
	}
	var r Result
	awaitStatus(t, e, "rv", "drift repaired", func(s Status) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, res := range results {
			if res.Drift && !res.AwaitingApproval {
				r = res
				return true
			}
		}
		return false
	})
	if !r.Changed || r.Err != nil || r.AwaitingApproval {
		t.Fatalf("approved drift repair: %+v", r)
	}
	if got := applyLog(t, work); got != "1\n1\n" {
		t.Fatalf("apply log %q: want the first apply and exactly one repair", got)
	}
	if st := e.Status("rv"); st.Phase != PhaseApplied || st.AppliedHash != s1.Hash {
		t.Fatalf("status after the repair: %+v", st)
	}

	// New inputs replace a pending repair with a plan of their own.
	repair = drift()
	s2 := reviewSpec(2)
	if _, err := e.Apply(s2); err != nil {
		t.Fatal(err)
	}
	p2 := awaitPlan(t, e, s2)
	if p2.Hash == repair.Hash || p2.Drift || p2.Replaces != repair.Hash {
		t.Fatalf("plan for new inputs %+v: want a new apply plan replacing %s", p2, repair.Hash)
	}
	if err := e.Approve("rv", repair.Hash); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("approving the replaced repair: %v, want ErrPlanMismatch", err)
	}
}
