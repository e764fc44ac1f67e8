package jobrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tfccm/tfccm/internal/repo"
)

// kubelet plays the Job controller and kubelet for Run against a fake
// clientset: each started Job's pod side runs in-process (runPacked with
// real tofu, writeResult), or, with kill, the pod dies without a result.
type kubelet struct {
	t      *testing.T
	client kubernetes.Interface
	tofu   string
	kill   bool
	// refuse: the Job controller cannot create the pod (as Pod Security
	// admission refuses it): a FailedCreate Event on the Job, no pod.
	refuse string
	// forge: the result is written with a key other than the Job's (as
	// another runner pod that may write Secrets there would).
	forge   bool
	mu      sync.Mutex
	started []string
}

func (k *kubelet) loop(ctx context.Context, ns string) {
	done := map[string]bool{}
	for ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		list, err := k.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			j := list.Items[i]
			if done[j.Name] || (j.Spec.Suspend != nil && *j.Spec.Suspend) || finished(&j) || j.Labels[LabelWorkspace] == "" {
				continue
			}
			if strings.HasPrefix(j.Name, "old-") {
				continue // the test ends it
			}
			done[j.Name] = true
			k.mu.Lock()
			k.started = append(k.started, j.Name)
			k.mu.Unlock()
			k.run(ctx, &j)
		}
	}
}

func (k *kubelet) run(ctx context.Context, j *batchv1.Job) {
	if k.refuse != "" {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: j.Name + ".refused", Namespace: j.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID},
			Reason:         "FailedCreate", Message: k.refuse, Type: corev1.EventTypeWarning, LastTimestamp: metav1.Now(),
		}
		if _, err := k.client.CoreV1().Events(j.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			k.t.Errorf("event: %v", err)
		}
		return
	}
	cond := batchv1.JobComplete
	if k.kill {
		cond = batchv1.JobFailed
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-abcde", Namespace: j.Namespace, Labels: map[string]string{"batch.kubernetes.io/job-name": j.Name}},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "tofu", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}},
			}}},
		}
		_, _ = k.client.CoreV1().Pods(j.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	} else {
		var in []byte
		for _, src := range j.Spec.Template.Spec.Volumes[0].Projected.Sources {
			s, err := k.client.CoreV1().Secrets(j.Namespace).Get(ctx, src.Secret.Name, metav1.GetOptions{})
			if err != nil {
				k.t.Errorf("input %s: %v", src.Secret.Name, err)
				return
			}
			if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != j.Name {
				k.t.Errorf("input %s is not owned by its Job: %v", s.Name, s.OwnerReferences)
			}
			in = append(in, s.Data[partKey]...)
		}
		out, _, err := runPacked(ctx, in, k.t.TempDir(), k.t.TempDir(), k.tofu)
		if err != nil {
			k.t.Errorf("runner: %v", err)
			return
		}
		if err := writeResult(ctx, k.client, j.Namespace, j.Name, string(j.UID), k.keyOf(j), out); err != nil {
			k.t.Errorf("write result: %v", err)
			return
		}
	}
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: cond, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"})
	if _, err := k.client.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		k.t.Errorf("job status: %v", err)
	}
}

func startKubelet(t *testing.T, kill bool) (*kubelet, *Config) {
	tofu := repo.Tofu(t)
	k := &kubelet{t: t, client: fake.NewClientset(), tofu: tofu, kill: kill}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := testConfig()
	cfg.Poll = 20 * time.Millisecond
	go k.loop(ctx, cfg.Namespace)
	return k, cfg
}

// Commands of one workspace through Run: files and a secret file named
// on the command line go in, the saved plan, the state and tofu's output
// come back; the Jobs and their Secrets are gone afterwards.
func TestRunThroughJobs(t *testing.T) {
	k, cfg := startKubelet(t, false)
	dir := filepath.Join(t.TempDir(), "lb-default-web")
	vars := filepath.Join(t.TempDir(), "secret.tfvars")
	write(t, dir, map[string]string{"main.tf": "variable \"v\" {\n  type = string\n}\noutput \"x\" {\n  value = \"got ${var.v}\"\n}\n", ".tfccm/applied.json": "{}"})
	write(t, filepath.Dir(vars), map[string]string{"secret.tfvars": "v = \"s3cret\"\n"})
	ctx := context.Background()
	env := append(os.Environ(), "TF_IN_AUTOMATION=1")
	steps := []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"init", "-input=false", "-no-color"}, "initialized"},
		{[]string{"plan", "-input=false", "-no-color", "-out=.tfccm/plan.tfplan", "-var-file=" + vars}, "Changes to Outputs"},
		{[]string{"apply", "-input=false", "-no-color", ".tfccm/plan.tfplan"}, "Apply complete"},
		{[]string{"output", "-json"}, "got s3cret"},
	}
	for _, s := range steps {
		res, err := Run(ctx, k.client, cfg, dir, s.args, env)
		if err != nil {
			t.Fatalf("%s: %v", s.args[0], err)
		}
		if res.Exit != 0 || !strings.Contains(res.Stdout, s.want) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", s.args[0], res.Exit, res.Stdout, res.Stderr)
		}
		if s.args[0] == "plan" {
			if _, err := os.Stat(filepath.Join(dir, ".tfccm/plan.tfplan")); err != nil {
				t.Errorf("the saved plan did not come back: %v", err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "terraform.tfstate")); err != nil {
		t.Errorf("the state did not come back: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".tfccm/applied.json")); string(b) != "{}" {
		t.Errorf("the engine's record was touched: %q", b)
	}
	jobs, _ := k.client.BatchV1().Jobs(cfg.Namespace).List(ctx, metav1.ListOptions{})
	if len(jobs.Items) != 0 || len(k.started) != len(steps) {
		t.Errorf("%d Jobs left, %d started; want 0 and %d", len(jobs.Items), len(k.started), len(steps))
	}
}

// A runner killed without a result is tofu failing, with why: out of
// memory names the setting to raise.
func TestRunKilledRunner(t *testing.T) {
	k, cfg := startKubelet(t, true)
	dir := filepath.Join(t.TempDir(), "lb-a")
	write(t, dir, map[string]string{"main.tf": ""})
	res, err := Run(context.Background(), k.client, cfg, dir, []string{"apply", ".tfccm/plan.tfplan"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit == 0 || !strings.Contains(res.Stderr, "Error: Runner out of memory") || !strings.Contains(res.Stderr, "raise terraform.job.memory_limit") || !strings.Contains(res.Stderr, "OOMKilled") {
		t.Errorf("result %+v", res)
	}
}

// An unfinished Job of the workspace (an earlier incarnation's) is waited
// for: the new Job starts only once it has ended.
func TestRunWaitsForAnEarlierJob(t *testing.T) {
	k, cfg := startKubelet(t, false)
	dir := filepath.Join(t.TempDir(), "lb-b")
	write(t, dir, map[string]string{"main.tf": ""})
	ctx := context.Background()
	old := cfg.jobSpec("old-run", "lb-b", "apply", []string{"x"})
	if _, err := k.client.BatchV1().Jobs(cfg.Namespace).Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, k.client, cfg, dir, []string{"init", "-no-color"}, nil)
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	k.mu.Lock()
	early := len(k.started)
	k.mu.Unlock()
	if early != 0 {
		t.Fatalf("a Job started while the earlier one still ran")
	}
	old.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	if _, err := k.client.BatchV1().Jobs(cfg.Namespace).UpdateStatus(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not end after the earlier Job did")
	}
	if len(k.started) != 1 {
		t.Errorf("%d Jobs ran, want 1", len(k.started))
	}
}

// A runner pod evicted while tofu runs (a node drained) is gone by the
// time its Job ends, its result written: the failure still says it was
// evicted, from the pod as read while it was being deleted (the Job
// counted it terminating).
func TestRunEvictedRunner(t *testing.T) {
	client := fake.NewClientset()
	cfg := testConfig()
	cfg.Poll = 20 * time.Millisecond
	listed := make(chan struct{}, 100)
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case listed <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		jobs := client.BatchV1().Jobs(cfg.Namespace)
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			list, err := jobs.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) == 0 || (list.Items[0].Spec.Suspend != nil && *list.Items[0].Spec.Suspend) {
				continue
			}
			j := list.Items[0]
			pods := client.CoreV1().Pods(cfg.Namespace)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-abcde", Namespace: j.Namespace, Labels: map[string]string{"batch.kubernetes.io/job-name": j.Name}},
				Spec:       corev1.PodSpec{NodeName: "node-b"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
				}}},
			}
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Error(err)
				return
			}
			one, zero := int32(1), int32(0)
			j.Status.Terminating = &one
			if _, err := jobs.UpdateStatus(ctx, &j, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
				return
			}
			for len(listed) > 0 {
				<-listed
			}
			select { // the engine may look while tofu saves its state
			case <-listed:
			case <-time.After(15 * time.Second):
			}
			if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
			// tofu got SIGINT and the runner reports it.
			a := newArchive()
			if err := a.add(docName, 0o600, []byte(`{"exit":1,"stderr":"Error: interrupted\n"}`)); err != nil {
				t.Error(err)
				return
			}
			b, err := a.bytes()
			if err == nil {
				err = writeResult(ctx, client, j.Namespace, j.Name, string(j.UID), resultKeyOf(&j), b)
			}
			if err != nil {
				t.Error(err)
				return
			}
			j.Status.Terminating = &zero
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
			if _, err := jobs.UpdateStatus(ctx, &j, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
			return
		}
	}()
	dir := filepath.Join(t.TempDir(), "lb-drained")
	write(t, dir, map[string]string{"main.tf": ""})
	res, err := Run(ctx, client, cfg, dir, []string{"apply", ".tfccm/plan.tfplan"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit == 0 || !strings.Contains(res.Stderr, "Error: Runner pod evicted") || !strings.Contains(res.Stderr, "on node node-b") || !strings.Contains(res.Stderr, "EvictionByEvictionAPI") {
		t.Errorf("result %+v; want the failure to say the runner pod on node-b was evicted", res)
	}
	if e, i := strings.Index(res.Stderr, "Error: Runner pod evicted"), strings.Index(res.Stderr, "Error: interrupted"); e < 0 || i < 0 || e > i {
		t.Errorf("stderr %q: want the eviction before tofu's own error (an Event keeps the message's first 1 KiB)", res.Stderr)
	}
}

// A plan the runner reports as succeeded (exit 2: changes, and how a
// crashed Go program exits) whose saved plan did not come back is a
// failure that says so: the engine never applies a plan it does not have.
func TestRunPlanWithoutSavedPlan(t *testing.T) {
	k, cfg := startKubelet(t, false)
	crashing := filepath.Join(t.TempDir(), "tofu")
	if err := os.WriteFile(crashing, []byte("#!/bin/sh\necho 'panic: boom' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	k.tofu = crashing
	dir := filepath.Join(t.TempDir(), "lb-c")
	write(t, dir, map[string]string{"main.tf": ""})
	res, err := Run(context.Background(), k.client, cfg, dir, []string{"plan", "-no-color", "-detailed-exitcode", "-out=.tfccm/plan.tfplan"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 1 || !strings.Contains(res.Stderr, "Error: Saved plan missing") || !strings.Contains(res.Stderr, "exited 2") || !strings.Contains(res.Stderr, "panic: boom") {
		t.Errorf("result %+v; want a failure saying the saved plan is missing, with tofu's output", res)
	}
	if got := planOut([]string{"apply", "-out=x"}); got != "" {
		t.Errorf("planOut(apply) = %q", got)
	}
}

// A result too large to return comes back without the workspace's files
// and leaves the engine's copy as it was (it used to empty it: every file
// the result lacked was removed).
func TestRunResultTooLarge(t *testing.T) {
	k, cfg := startKubelet(t, false)
	big := filepath.Join(t.TempDir(), "tofu")
	script := fmt.Sprintf("#!/bin/sh\nhead -c %d /dev/urandom > big.bin\nexit 0\n", PartSize*MaxParts+(1<<20))
	if err := os.WriteFile(big, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	k.tofu = big
	dir := filepath.Join(t.TempDir(), "lb-d")
	write(t, dir, map[string]string{"main.tf": "# kept", ".terraform.lock.hcl": "# kept"})
	res, err := Run(context.Background(), k.client, cfg, dir, []string{"apply", "-no-color"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 1 || !strings.Contains(res.Stderr, "above the job runner's limit") {
		t.Errorf("result %+v; want a failure naming the limit", res)
	}
	for _, f := range []string{"main.tf", ".terraform.lock.hcl"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != "# kept" {
			t.Errorf("%s after a result without files: %q, %v; want it kept", f, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "big.bin")); err == nil {
		t.Errorf("big.bin came back")
	}
}

// lbhostModule is a root module with one provider from the image's mirror
// (the lbhost provider, never reaching a host) and no backend; its output
// x is "read".
const lbhostModule = `terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}
provider "lbhost" {
  netns = "tfccm-none"
}
output "x" {
  value = "read"
}
`

// A module without a backend or module calls (a health probe's copy)
// brings only its lock file and the providers' record back from init:
// the next command's pod still links its providers first (it used to run without them: "Required
// plugins are not installed" on every health read with runners).
func TestRunModuleWithProvidersOnly(t *testing.T) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	k, cfg := startKubelet(t, false)
	dir := filepath.Join(t.TempDir(), ".probes", "lb-x", "health")
	write(t, dir, map[string]string{"main.tf": lbhostModule})
	env := append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE="+cliConfig)
	ctx := context.Background()
	for _, args := range [][]string{
		{"init", "-input=false", "-no-color"},
		{"apply", "-input=false", "-no-color", "-auto-approve", "-refresh-only", "-lock=false"},
	} {
		res, err := Run(ctx, k.client, cfg, dir, args, env)
		if err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
		if res.Exit != 0 {
			t.Fatalf("%s: exit %d, stderr %q", args[0], res.Exit, res.Stderr)
		}
	}
	if rels, err := carriedFiles(filepath.Join(dir, ".terraform")); err != nil || len(rels) != 1 || rels[0] != filepath.Base(providerLinksFile) {
		t.Fatalf("the module's .terraform came back with %v (%v): this test needs a module whose .terraform holds only providers and their record", rels, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate")); err != nil || !strings.Contains(string(b), `"read"`) {
		t.Errorf("the refresh wrote no outputs (%v): %s", err, b)
	}
}

// A runner pod is untrusted code: a provider there that leaves a link out
// of the workspace (here a local-exec provisioner linking the pod's
// ServiceAccount token path and another workspace) gets its run failed
// with an error naming the link; the engine's copy gets no link, and the
// next run packs nothing from outside its workspace.
func TestRunRefusesALinkTheRunnerMade(t *testing.T) {
	k, cfg := startKubelet(t, false)
	dir := filepath.Join(t.TempDir(), "lb-e")
	write(t, dir, map[string]string{"main.tf": `resource "terraform_data" "x" {
  provisioner "local-exec" {
    command = "ln -s /var/run/secrets/kubernetes.io/serviceaccount/token leak.auto.tfvars"
  }
}
`})
	ctx := context.Background()
	for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-input=false", "-no-color", "-auto-approve"}} {
		res, err := Run(ctx, k.client, cfg, dir, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
		if args[0] == "init" {
			if res.Exit != 0 {
				t.Fatalf("init: %+v", res)
			}
			continue
		}
		if res.Exit != 1 || !strings.Contains(res.Stderr, "Error: Runner result refused") ||
			!strings.Contains(res.Stderr, "link leak.auto.tfvars -> /var/run/secrets/kubernetes.io/serviceaccount/token is absolute") ||
			!strings.Contains(res.Stdout, "Apply complete") {
			t.Errorf("apply: exit %d, stdout %q, stderr %q; want a failure naming the link, with tofu's output", res.Exit, res.Stdout, res.Stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "leak.auto.tfvars")); err == nil {
		t.Error("the runner's link came back into the engine's workspace")
	}
}

// A runner pod the namespace refuses fails the run at once, with the
// admission's words, instead of waiting out the Job's deadline; the Job
// is deleted.
func TestRunRefusedPod(t *testing.T) {
	k, cfg := startKubelet(t, false)
	k.refuse = `Error creating: pods "x" is forbidden: violates PodSecurity "restricted:latest": hostPath volumes (volume "plugin-cache")`
	dir := filepath.Join(t.TempDir(), "lb-f")
	write(t, dir, map[string]string{"main.tf": ""})
	start := time.Now()
	res, err := Run(context.Background(), k.client, cfg, dir, []string{"plan", "-no-color"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 1 || !strings.Contains(res.Stderr, "Error: Runner pod refused") || !strings.Contains(res.Stderr, `violates PodSecurity "restricted:latest": hostPath volumes`) ||
		!strings.Contains(res.Stderr, "Namespace "+cfg.Namespace+" refused") {
		t.Errorf("result %+v; want a failure with the admission's words", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refused run took %v", d)
	}
	jobs, _ := k.client.BatchV1().Jobs(cfg.Namespace).List(context.Background(), metav1.ListOptions{})
	if len(jobs.Items) != 0 {
		t.Errorf("%d Jobs left", len(jobs.Items))
	}
}

// resultKeyOf is the key Job j's container "result" got (seal.go).
func resultKeyOf(j *batchv1.Job) string {
	for _, c := range j.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == envResultKey {
				return e.Value
			}
		}
	}
	return ""
}

// keyOf is the key the kubelet's runner seals Job j's result with.
func (k *kubelet) keyOf(j *batchv1.Job) string {
	if k.forge {
		return "forged"
	}
	return resultKeyOf(j)
}

// A result not sealed with its Job's key (written by someone else who may
// create Secrets in the runner namespace) is refused: the run fails and
// the engine's workspace stays as it was.
func TestRunRefusesAForgedResult(t *testing.T) {
	k, cfg := startKubelet(t, false)
	k.forge = true
	dir := filepath.Join(t.TempDir(), "lb-g")
	write(t, dir, map[string]string{"main.tf": "# kept"})
	_, err := Run(context.Background(), k.client, cfg, dir, []string{"init", "-no-color"}, nil)
	if err == nil || !strings.Contains(err.Error(), "tfccm.io/result-mac does not match") {
		t.Fatalf("run: %v; want the forged result refused", err)
	}
	if got := tree(t, dir); got != "main.tf=# kept" {
		t.Errorf("workspace after a forged result: %s", got)
	}
}
