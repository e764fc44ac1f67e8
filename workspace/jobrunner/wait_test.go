package jobrunner

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestWaitJobWatches: waitJob learns that its Job ended from the watch,
// not from its next read (the poll here is an hour), whether the Job ends
// while it waits or ended before it began.
func TestWaitJobWatches(t *testing.T) {
	for _, tc := range []struct {
		name        string
		endedBefore bool
	}{{"ends while waiting", false}, {"ended before", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := fake.NewClientset()
			cfg := &Config{Namespace: "ns", Poll: time.Hour}
			jobs := client.BatchV1().Jobs("ns")
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}
			complete := func() {
				job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
				if _, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
					t.Error(err)
				}
			}
			if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.endedBefore {
				complete()
			} else {
				time.AfterFunc(200*time.Millisecond, complete)
			}
			start := time.Now()
			got, _, err := waitJob(ctx, client, cfg, "j")
			if err != nil {
				t.Fatal(err)
			}
			if !finished(got) {
				t.Errorf("waitJob returned an unfinished Job: %+v", got.Status)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("waitJob took %s: it waited for a poll", d)
			}
		})
	}
}

// TestWaitOthersNeverScheduled: an earlier incarnation's Job whose pod was
// never bound to a node, or refused by the namespace, is deleted (its tofu
// never ran) and the run goes on; one whose pod was bound, or that has no
// pod yet, is waited for.
func TestWaitOthersNeverScheduled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod // nil: the Job has no pod (yet)
		failed  int32
		refused bool // a FailedCreate Event on the Job
		deleted bool
	}{
		{name: "refused by the namespace", refused: true, deleted: true},
		{name: "unschedulable", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}}}, deleted: true},
		{name: "bound, pulling its image", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}},
		{name: "running", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		{name: "no pod yet"},
		{name: "an earlier pod failed", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, failed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Poll = 10 * time.Millisecond
			client := fake.NewClientset()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			old := cfg.jobSpec("old-run", "lb-a", "apply", []string{"x"})
			old.Spec.Suspend = nil
			old.Status.Failed = tc.failed
			if _, err := client.BatchV1().Jobs(cfg.Namespace).Create(ctx, old, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.refused {
				ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "old-run.1", Namespace: cfg.Namespace}, Reason: "FailedCreate",
					InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "old-run", Namespace: cfg.Namespace}, Message: "violates PodSecurity"}
				if _, err := client.CoreV1().Events(cfg.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.pod != nil {
				tc.pod.ObjectMeta = metav1.ObjectMeta{Name: "old-run-abcde", Namespace: cfg.Namespace, Labels: map[string]string{"batch.kubernetes.io/job-name": "old-run"}}
				if _, err := client.CoreV1().Pods(cfg.Namespace).Create(ctx, tc.pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			err := waitOthers(ctx, client, cfg, "lb-a")
			_, getErr := client.BatchV1().Jobs(cfg.Namespace).Get(context.Background(), "old-run", metav1.GetOptions{})
			if tc.deleted {
				if err != nil || getErr == nil {
					t.Errorf("waitOthers: %v; the Job is still there (%v)", err, getErr)
				}
				return
			}
			if err == nil || getErr != nil {
				t.Errorf("waitOthers did not wait (%v), or deleted the Job (%v)", err, getErr)
			}
		})
	}
}
