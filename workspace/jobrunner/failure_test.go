package jobrunner

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestOOMKillCount(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		ok       bool
	}{
		{"v2 memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n", 2, true},
		{"v1 memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", 1, true},
		{"no counter (old kernel)", "oom_kill_disable 0\nunder_oom 0\n", 0, false},
		{"garbage", "oom_kill x\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := oomKillCount(tc.in)
			if n != tc.want || ok != tc.ok {
				t.Errorf("got %d, %v; want %d, %v", n, ok, tc.want, tc.ok)
			}
		})
	}
}

// The out-of-memory diagnostic reaches the Event as one summary naming
// the setting and the limit.
func TestOutOfMemory(t *testing.T) {
	cfg := testConfig()
	cfg.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("48Mi")}
	msg := outOfMemory("apply", limitOf(cfg), "")
	for _, want := range []string{"Error: Runner out of memory\n\n", "tofu apply", "limit of 48Mi", "raise terraform.job.memory_limit", "runner.memoryLimit"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if limitOf(testConfig()) != "" {
		t.Error("a limit without one set")
	}
}

// An evicted runner pod (a node drained) is told after tofu's own error.
func TestEvicted(t *testing.T) {
	cfg := testConfig()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-run-x-abcde", Namespace: cfg.Namespace, Labels: map[string]string{"batch.kubernetes.io/job-name": "tfccm-run-x"}},
		Spec:       corev1.PodSpec{NodeName: "node-b"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"},
		}},
	}
	got := evictedPods([]corev1.Pod{*pod})
	for _, want := range []string{"Error: Runner pod evicted", "node-b", "EvictionByEvictionAPI", "retries"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	pod.Status.Conditions = nil
	if got := evictedPods([]corev1.Pod{*pod}); got != "" {
		t.Errorf("a pod not evicted: %q", got)
	}
}

// Sweep deletes this controller's finished and never-started Jobs once
// they are old enough, and leaves running ones and other controllers'.
func TestSweep(t *testing.T) {
	cfg := testConfig()
	now := time.Now()
	old := metav1.NewTime(now.Add(-5 * time.Minute))
	fresh := metav1.NewTime(now.Add(-5 * time.Second))
	yes := true
	job := func(name string, owner string, mod func(*batchv1.Job)) *batchv1.Job {
		c := *cfg
		c.Identity = owner
		j := c.jobSpec(name, "lb-a", "apply", []string{"in"})
		j.CreationTimestamp = old
		if mod != nil {
			mod(j)
		}
		return j
	}
	ended := func(at metav1.Time, typ batchv1.JobConditionType) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: at}}
		}
	}
	client := fake.NewClientset(
		job("complete-old", cfg.Identity, ended(old, batchv1.JobComplete)),
		job("failed-old", cfg.Identity, ended(old, batchv1.JobFailed)),
		job("suspended-old", cfg.Identity, func(j *batchv1.Job) { j.Spec.Suspend = &yes }),
		job("complete-fresh", cfg.Identity, ended(fresh, batchv1.JobComplete)),
		job("running", cfg.Identity, nil),
		job("others", "someone/else", ended(old, batchv1.JobComplete)),
	)
	if n := sweep(context.Background(), client, cfg, now); n != 3 {
		t.Errorf("swept %d, want 3", n)
	}
	list, _ := client.BatchV1().Jobs(cfg.Namespace).List(context.Background(), metav1.ListOptions{})
	var left []string
	for _, j := range list.Items {
		left = append(left, j.Name)
	}
	if strings.Join(left, ",") != "complete-fresh,others,running" {
		t.Errorf("left %v", left)
	}
}
