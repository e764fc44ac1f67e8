package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// countingBinary writes a wrapper that logs each tofu subcommand to a file
// and then execs the real tofu; it returns the wrapper and a counter.
func countingBinary(t testing.TB) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> '%s'\nexec '%s' \"$@\"\n", log, repo.Tofu(t))
	bin := filepath.Join(dir, "tofu-wrapper")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, func() []string {
		b, err := os.ReadFile(log)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
}

func count(calls []string, sub string) int {
	n := 0
	for _, c := range calls {
		if c == sub {
			n++
		}
	}
	return n
}

const testModule = `variable "n" {
  type = number
}

variable "sleep" {
  type    = number
  default = 0
}

resource "terraform_data" "a" {
  input            = var.n
  triggers_replace = [var.n]
  provisioner "local-exec" {
    command     = "echo \"$N\" >> \"$LOG.start\"; while [ -e \"$HOLD\" ]; do sleep 0.05; done; sleep \"$SECONDS_TO_SLEEP\"; echo \"$N\" >> \"$LOG\""
    environment = { SECONDS_TO_SLEEP = var.sleep, N = var.n, LOG = "${path.module}/applied.log", HOLD = "${path.module}/../hold" }
  }
}

resource "terraform_data" "b" {
  input = "b-${var.n}"
}

output "value" {
  value = terraform_data.a.output
}

output "list" {
  value = [terraform_data.b.output, "x"]
}

output "password" {
  value     = "pw-${var.n}-hush"
  sensitive = true
}
`

const destroyModule = `resource "terraform_data" "d" {
  input = "d"
  provisioner "local-exec" {
    when        = destroy
    command     = "echo destroyed > \"$MARK\""
    environment = { MARK = "${path.module}/../destroyed.mark" }
  }
}
`

func testSpec(name string, n, sleep int) Spec {
	return Spec{
		Name: name,
		Files: map[string][]byte{
			"main.tf":           []byte(testModule),
			"tfccm.auto.tfvars": []byte(fmt.Sprintf("n     = %d\nsleep = %d\n", n, sleep)),
		},
	}
}

func newTestEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = repo.Tofu(t)
	}
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	if opts.GracePeriod == 0 {
		opts.GracePeriod = 10 * time.Second
	}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	t.Cleanup(func() {
		cancel()
		<-e.Done()
		killStrays(t, opts.WorkDir)
	})
	return e
}

// killStrays ends processes left running in dir by interrupted tofu runs
// (local-exec children outlive a SIGINTed or SIGKILLed tofu), found by
// their working directory.
func killStrays(t testing.TB, dir string) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == dir || strings.HasPrefix(cwd, dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func waitApplied(t testing.TB, e *Engine, spec Spec) Status {
	t.Helper()
	if spec.Hash == "" {
		spec.Hash = spec.ContentHash()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.Hash)
	if err != nil {
		t.Fatalf("wait %s: %v (status %+v)", spec.Name, err, st)
	}
	return st
}

func TestApplyOutputsNoopAndRestart(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work})

	spec := testSpec("lb-one", 1, 0)
	st, err := e.Apply(spec)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != PhasePending && st.Phase != PhaseRunning {
		t.Fatalf("first Apply returned phase %q, want Pending or Running", st.Phase)
	}
	st = waitApplied(t, e, spec)
	if st.Phase != PhaseApplied || st.AppliedHash != spec.ContentHash() {
		t.Fatalf("status after apply = %+v", st)
	}
	if got := string(st.Outputs["value"]); got != "1" {
		t.Errorf("output value = %s, want 1", got)
	}
	if got := string(st.Outputs["list"]); got != `["b-1","x"]` {
		t.Errorf("output list = %s", got)
	}
	if got := string(st.Outputs["password"]); got != string(SensitiveValue) {
		t.Errorf("sensitive output = %s, want redacted", got)
	}
	first := calls()
	if count(first, "init") != 1 || count(first, "plan") != 0 || count(first, "apply") != 1 {
		t.Fatalf("first apply ran %v, want one init and one apply that plans itself", first)
	}
	rec, err := os.ReadFile(filepath.Join(work, "lb-one", ".tfccm", "applied.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "hush") {
		t.Fatalf("applied record holds a sensitive value: %s", rec)
	}

	// Same spec again: no tofu process at all.
	st, err = e.Apply(spec)
	if err != nil || st.Phase != PhaseApplied {
		t.Fatalf("unchanged Apply = %+v, %v; want Applied at once", st, err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := calls(); len(got) != len(first) {
		t.Fatalf("unchanged Apply ran tofu: %v", got[len(first):])
	}

	// A restarted controller (new engine, same work dir) knows it too.
	e2 := newTestEngine(t, Options{Binary: bin, WorkDir: work})
	if st := e2.Status("lb-one"); st.Phase != PhaseApplied || string(st.Outputs["value"]) != "1" {
		t.Fatalf("status after restart = %+v", st)
	}
	st, err = e2.Apply(spec)
	if err != nil || st.Phase != PhaseApplied {
		t.Fatalf("Apply after restart = %+v, %v", st, err)
	}
	out, err := e2.Outputs("lb-one")
	if err != nil || string(out["value"]) != "1" {
		t.Fatalf("Outputs after restart = %v, %v", out, err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := calls(); len(got) != len(first) {
		t.Fatalf("restart re-ran tofu for an unchanged workspace: %v", got[len(first):])
	}

	// Changed inputs: plan and apply, but no init.
	spec2 := testSpec("lb-one", 2, 0)
	if _, err := e2.Apply(spec2); err != nil {
		t.Fatal(err)
	}
	st = waitApplied(t, e2, spec2)
	if string(st.Outputs["value"]) != "2" {
		t.Errorf("output after change = %s", st.Outputs["value"])
	}
	more := calls()[len(first):]
	if count(more, "init") != 0 || count(more, "plan") != 1 || count(more, "apply") != 1 {
		t.Fatalf("input change ran %v, want plan and apply only", more)
	}
}

func TestCoalescing(t *testing.T) {
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin})
	first := testSpec("coalesce", 1, 1)
	if _, err := e.Apply(first); err != nil {
		t.Fatal(err)
	}
	// Wait until tofu is applying, then pile up updates.
	deadline := time.Now().Add(time.Minute)
	for count(calls(), "apply") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("apply never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var last Spec
	for n := 2; n <= 8; n++ {
		last = testSpec("coalesce", n, 1)
		st, err := e.Apply(last)
		if err != nil {
			t.Fatal(err)
		}
		if st.Hash != last.ContentHash() {
			t.Fatalf("status hash %s is not the newest desired", st.Hash)
		}
	}
	st := waitApplied(t, e, last)
	if string(st.Outputs["value"]) != "8" {
		t.Fatalf("final output = %s, want 8", st.Outputs["value"])
	}
	if n := count(calls(), "apply"); n != 2 {
		t.Fatalf("7 updates during one apply caused %d applies in all, want 2", n)
	}
	log, _ := os.ReadFile(filepath.Join(e.Dir("coalesce"), "applied.log"))
	if got := strings.Fields(string(log)); strings.Join(got, ",") != "1,8" {
		t.Fatalf("applied inputs %v, want [1 8]", got)
	}
}

func TestFailureIsScrubbedAndRetried(t *testing.T) {
	const tokenValue = "s3cr3t-Token-value"
	logs := captureLog(t)
	var mu sync.Mutex
	var results []Result
	e := newTestEngine(t, Options{
		Env:     map[string]string{"API_TOKEN": tokenValue},
		Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 200 * time.Millisecond},
		OnResult: func(name string, r Result) {
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
		},
	})
	spec := Spec{Name: "failing", Files: map[string][]byte{"main.tf": []byte(`resource "terraform_data" "x" {
  provisioner "local-exec" {
    command = "echo \"token is $API_TOKEN\"; exit 3"
  }
}
`), tofu.CredentialsFile: []byte(`env = ["API_TOKEN"]`)}}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.ContentHash())
	if err == nil || st.Phase != PhaseFailed {
		t.Fatalf("Wait = %+v, %v; want failure", st, err)
	}
	msg := err.Error()
	for _, want := range []string{"apply: local-exec provisioner error", "exit status 3", "token is " + secret.Placeholder, "main.tf line 2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, tokenValue) {
		t.Fatalf("error leaks the credential: %q", msg)
	}
	if len(msg) > tofu.MaxMessage+len("apply: ") {
		t.Errorf("error is %d bytes, too long for an Event", len(msg))
	}
	// The log has tofu's own error lines at the default verbosity, scrubbed.
	logged := logs.String()
	for _, want := range []string{`"Terraform command failed"`, `workspace="failing"`, `op="apply"`, "exit status 3", "token is " + secret.Placeholder} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %q:\n%s", want, logged)
		}
	}
	if strings.Contains(logged, tokenValue) {
		t.Fatal("the log leaks the credential")
	}
	// Retries follow the backoff without new Apply calls.
	deadline := time.Now().Add(30 * time.Second)
	for e.Status(spec.Name).Attempts < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no retries: %+v", e.Status(spec.Name))
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(results) < 3 || results[0].Err == nil || results[0].Op != "apply" || results[0].Attempt != 1 || results[1].Attempt != 2 {
		t.Fatalf("OnResult got %+v", results)
	}
	for _, r := range results {
		if strings.Contains(r.Err.Error(), tokenValue) {
			t.Fatal("OnResult error leaks the credential")
		}
	}
}

func TestEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("TF_VAR_n", "666")
	t.Setenv("LEAKY", "from-process")
	t.Setenv("PASSED", "passed-value")
	e := newTestEngine(t, Options{Env: map[string]string{"GIVEN": "given-value"}, PassEnv: []string{"PASSED"}})
	spec := Spec{Name: "env", Files: map[string][]byte{"main.tf": []byte(`variable "n" {
  type    = number
  default = 1
}

resource "terraform_data" "env" {
  provisioner "local-exec" {
    command = "env > \"$OUT\""
    environment = { OUT = "${path.module}/env.txt" }
  }
}

output "n" {
  value = var.n
}
`), tofu.CredentialsFile: []byte(`env = ["GIVEN", "PASSED"]`)}}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if string(st.Outputs["n"]) != "1" {
		t.Errorf("TF_VAR_n from the process environment reached tofu: n = %s", st.Outputs["n"])
	}
	b, err := os.ReadFile(filepath.Join(e.Dir("env"), "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, want := range []string{"GIVEN=given-value", "PASSED=passed-value", "TF_IN_AUTOMATION=1", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("tofu environment lacks %s", want)
		}
	}
	for _, bad := range []string{"LEAKY", "TF_VAR_n"} {
		if strings.Contains(env, bad) {
			t.Errorf("tofu environment has %s", bad)
		}
	}
}

func TestDestroyRemovesEverything(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work})
	spec := Spec{Name: "gone", Files: map[string][]byte{"main.tf": []byte(destroyModule)}}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.ContentHash())
	if err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "destroyed.mark")); err != nil || strings.TrimSpace(string(b)) != "destroyed" {
		t.Fatalf("destroy-time provisioner did not run: %v", err)
	}
	if _, err := os.Stat(e.Dir("gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace dir still there: %v", err)
	}
	// Destroying again is a no-op, and so is a restart's view.
	if st, err := e.Destroy(spec); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("second Destroy = %+v, %v", st, err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work})
	before, err := os.ReadDir(work) // the engine's own (its socket directory)
	if err != nil {
		t.Fatal(err)
	}
	good := map[string][]byte{"main.tf": []byte("")}
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"empty name", Spec{Name: "", Files: good}},
		{"slash in name", Spec{Name: "a/b", Files: good}},
		{"dotdot name", Spec{Name: "..", Files: good}},
		{"escaping path", Spec{Name: "ok", Files: map[string][]byte{"../evil.tf": nil}}},
		{"absolute path", Spec{Name: "ok", Files: map[string][]byte{"/etc/evil.tf": nil}}},
		{"state file", Spec{Name: "ok", Files: map[string][]byte{"terraform.tfstate": nil}}},
		{"engine dir", Spec{Name: "ok", Files: map[string][]byte{".tfccm/applied.json": nil}}},
		{"no files", Spec{Name: "ok"}},
		{"mode for missing file", Spec{Name: "ok", Files: good, Modes: map[string]os.FileMode{"x.sh": 0o755}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.Apply(tc.spec); err == nil {
				t.Fatal("Apply accepted bad input")
			}
			if _, err := e.Destroy(tc.spec); err == nil {
				t.Fatal("Destroy accepted bad input")
			}
		})
	}
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(before) {
		t.Fatalf("bad input wrote %v (the engine had %v)", entries, before)
	}
	if _, err := New(Options{Binary: repo.Tofu(t), WorkDir: work, Env: map[string]string{"TF_VAR_x": "1"}}); err == nil {
		t.Fatal("New accepted TF_VAR_ in env")
	}
	if _, err := New(Options{Binary: filepath.Join(work, "missing"), WorkDir: work}); err == nil {
		t.Fatal("New accepted a missing binary")
	}
}

func TestTimeoutInterruptsTofu(t *testing.T) {
	e := newTestEngine(t, Options{Timeout: 2 * time.Second, Backoff: Backoff{Initial: time.Hour}})
	spec := testSpec("slow", 1, 30)
	start := time.Now()
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.ContentHash())
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 2s") {
		t.Fatalf("Wait = %+v, %v; want a timeout", st, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	// SIGINT let tofu release its lock and write state: a manual plan works.
	cmd := exec.Command(repo.Tofu(t), "plan", "-no-color", "-input=false", "-lock-timeout=0s")
	cmd.Dir = e.Dir("slow")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("workspace unusable after timeout: %v\n%s", err, out)
	}
}

func TestMetrics(t *testing.T) {
	e := newTestEngine(t, Options{})
	before, _ := testutil.GetCounterMetricValue(operationsTotal.WithLabelValues("apply", tofu.ResultSuccess))
	beforeNoop, _ := testutil.GetCounterMetricValue(operationsTotal.WithLabelValues("apply", resultNoop))
	beforeHist, _ := testutil.GetHistogramMetricCount(operationDuration.WithLabelValues("plan"))
	// The first apply plans itself; a change is planned, then applied; the
	// same spec again runs nothing.
	for _, spec := range []Spec{testSpec("metrics", 1, 0), testSpec("metrics", 2, 0)} {
		if _, err := e.Apply(spec); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, e, spec)
		if _, err := e.Apply(spec); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := testutil.GetCounterMetricValue(operationsTotal.WithLabelValues("apply", tofu.ResultSuccess))
	afterNoop, _ := testutil.GetCounterMetricValue(operationsTotal.WithLabelValues("apply", resultNoop))
	afterHist, _ := testutil.GetHistogramMetricCount(operationDuration.WithLabelValues("plan"))
	if after-before != 2 || afterNoop-beforeNoop != 2 || afterHist-beforeHist != 1 {
		t.Fatalf("apply success +%v, noop +%v, plan durations +%v; want 2, 2, 1", after-before, afterNoop-beforeNoop, afterHist-beforeHist)
	}
	if v, _ := testutil.GetGaugeMetricValue(inFlight); v != 0 {
		t.Fatalf("runs_in_flight = %v after all work finished", v)
	}
	if v, _ := testutil.GetGaugeMetricValue(queueDepth); v != 0 {
		t.Fatalf("queue_depth = %v after all work finished", v)
	}
	// The metrics are on the legacy registry the CCM serves.
	got, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range got {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"tfccm_workspace_operations_total", "tfccm_workspace_operation_duration_seconds", "tfccm_workspace_queue_depth", "tfccm_workspace_runs_in_flight"} {
		if !names[want] {
			t.Errorf("legacy registry lacks %s", want)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for klog's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureLog sends klog's output (at the default verbosity) to a buffer
// for the rest of the test.
func captureLog(t *testing.T) *lockedBuffer {
	t.Helper()
	b := &lockedBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(b)
	t.Cleanup(func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return b
}

// TestOnApplyStartSummarizesThePlan: OnApplyStart hears of each apply of
// a plan with changes, before it ends, with the plan's summary (read from
// the plan's own output: no `tofu show`); applying the same content again
// runs nothing and says nothing.
func TestOnApplyStartSummarizesThePlan(t *testing.T) {
	var mu sync.Mutex
	var started []string
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, OnApplyStart: func(name, summary string) {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, name+": "+summary)
	}})
	for _, n := range []int{2, 3, 3} {
		spec := testSpec("sum", n, 0)
		if _, err := e.Apply(spec); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, e, spec)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"sum: 2 to add, 0 to change, 0 to destroy", "sum: 1 to add, 1 to change, 1 to destroy"}
	if strings.Join(started, "|") != strings.Join(want, "|") {
		t.Errorf("OnApplyStart calls %q, want %q", started, want)
	}
	if n := count(calls(), "show"); n != 0 {
		t.Errorf("%d tofu show runs for the summaries, want 0 (calls %q)", n, calls())
	}
}
