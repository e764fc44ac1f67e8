package jobrunner

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// sweepAge is how long a runner Job must have been finished (or
// suspended) before Sweep deletes it: a stand-in reads its result within
// seconds of the end, and suspends a Job only while it writes its inputs.
const sweepAge = time.Minute

// Sweep deletes the runner Jobs (and with them their pods and Secrets) an
// earlier incarnation of this controller left behind: finished ones, whose
// results nobody reads any more, and suspended ones that never started.
// Jobs still running are left alone: the next run of their workspace waits
// for them (waitOthers) and releases the lock they leave. The CCM calls it
// once at its start; without it the leftovers go with their TTL. It returns
// how many Jobs it deleted.
func (l *Locks) Sweep(ctx context.Context) int {
	c := l.client.Load()
	if c == nil {
		return 0
	}
	return sweep(ctx, *c, l.cfg, time.Now())
}

func sweep(ctx context.Context, client kubernetes.Interface, cfg *Config, now time.Time) int {
	jobs := client.BatchV1().Jobs(cfg.Namespace)
	list, err := jobs.List(ctx, metav1.ListOptions{LabelSelector: LabelRunner + "=job," + LabelOwner + "=" + ownerHash(cfg.Identity)})
	if err != nil {
		klog.InfoS("Cannot list leftover runner Jobs", "namespace", cfg.Namespace, "err", err)
		return 0
	}
	bg := metav1.DeletePropagationBackground
	n := 0
	for i := range list.Items {
		j := &list.Items[i]
		since, stale := leftover(j)
		if !stale || now.Sub(since) < sweepAge {
			continue
		}
		if err := jobs.Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			klog.InfoS("Cannot delete a leftover runner Job", "job", j.Name, "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		klog.InfoS("Deleted runner Jobs an earlier incarnation left", "namespace", cfg.Namespace, "count", n)
	}
	return n
}

// leftover reports whether j is a Job nobody will read (finished, or
// suspended: it never started) and since when.
func leftover(j *batchv1.Job) (time.Time, bool) {
	if j.DeletionTimestamp != nil {
		return time.Time{}, false
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return j.CreationTimestamp.Time, true
	}
	return time.Time{}, false
}
