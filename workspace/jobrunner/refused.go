package jobrunner

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// A runner pod the namespace refuses: the Job controller cannot create it
// (Pod Security admission, a quota, a webhook) and says so only in a
// FailedCreate Event on the Job, which no condition ever reflects: the run
// would wait out the Job's deadline. The stand-in reads those Events while
// its Job has no pod, and fails the run with the admission's words.

// refusedError is a run whose pod the Job controller could not create.
type refusedError struct {
	job, namespace, message string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("Job %s/%s cannot create its pod: %s", e.namespace, e.job, e.message)
}

// diagnostic is the failure told as tofu's diagnostic: what refused the
// pod, and what to change.
func (e *refusedError) diagnostic() string {
	return fmt.Sprintf("Error: Runner pod refused\n\nNamespace %s refused the pod of runner Job %s: %s\n\n"+
		"Runner pods meet Pod Security's restricted level unless terraform.job.plugin_cache (a hostPath) or "+
		"host_network is set, which need the privileged level: label the runner namespace for the level its pods "+
		"need (pod-security.kubernetes.io/enforce), or change the setting. tfccm retries the run.\n",
		e.namespace, e.job, e.message)
}

// refused returns the error of Job job whose pod the Job controller could
// not create (its latest FailedCreate Event), nil while it has a pod or
// no such Event.
func refused(ctx context.Context, client kubernetes.Interface, cfg *Config, job *batchv1.Job) error {
	if job.Status.Active > 0 || job.Status.Succeeded > 0 || job.Status.Failed > 0 || (job.Spec.Suspend != nil && *job.Spec.Suspend) {
		return nil
	}
	sel := fields.Set{"involvedObject.uid": string(job.UID), "reason": "FailedCreate"}.AsSelector().String()
	list, err := client.CoreV1().Events(cfg.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(list.Items) == 0 {
		return nil
	}
	if pods, err := jobPods(ctx, client, cfg, job.Name); err != nil || len(pods.Items) > 0 {
		return nil // created since (a refusal that passed: a quota freed)
	}
	events := list.Items
	sort.Slice(events, func(i, j int) bool { return lastSeen(&events[i]).Before(lastSeen(&events[j])) })
	return &refusedError{job: job.Name, namespace: cfg.Namespace, message: events[len(events)-1].Message}
}

// lastSeen is when Event e last happened.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
