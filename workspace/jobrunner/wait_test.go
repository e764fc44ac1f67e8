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
