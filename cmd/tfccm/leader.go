package main

// The leader as a workstation finds it: through the leader Lease in
// tfccm's namespace and then the pod, which the leader names on the Lease
// (annotations.LeaderPod, while annotations.LeaderIdentity is the holder);
// else the holder identity "<host>_<uuid>" names it, a pod's host name
// being its name without host networking. Every read is the user's own:
// what their RBAC refuses is named (verb, resource, namespace) rather than
// reported as a bare "forbidden".

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
)

// leaderFlags name where the leader Lease is: tfccm's namespace (the
// chart's release namespace) and the Lease's name.
type leaderFlags struct {
	namespace, lease string
}

func (l *leaderFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.namespace, "tfccm-namespace", config.DefaultNamespace, "tfccm's own namespace (the Helm chart's release namespace), where its leader Lease is")
	fs.StringVar(&l.lease, "lease", annotations.LeaderLease, "the leader Lease's name (the chart's leaderElection.leaseName)")
}

// leader is the process holding the leader Lease.
type leader struct {
	identity string    // the Lease's holder identity
	pod      string    // the pod it runs in (the identity's host name)
	since    time.Time // when it took the Lease (zero: unknown)
	renewed  time.Time
	duration time.Duration
}

// Errors finding the leader; each message says what to check.
var (
	errNoLease    = errors.New("tfccm is not installed there, or under another namespace or Lease name")
	errNoLeader   = errors.New("no leader: the Lease has no holder (the CCM pods are starting, stopped, or cannot reach the apiserver; kubectl get pods -n NAMESPACE)")
	errStaleLease = errors.New("the leader Lease is stale: its holder stopped renewing it (the pod is gone, hung or cut off from the apiserver; a standby takes over once it expires)")
)

// findLeader reads the leader Lease: its holder and whether it is fresh.
// A stale Lease (not renewed for its whole duration) is returned with
// errStaleLease, so a caller can still name it.
func findLeader(ctx context.Context, client kubernetes.Interface, lf leaderFlags, now time.Time) (leader, error) {
	lease, err := client.CoordinationV1().Leases(lf.namespace).Get(ctx, lf.lease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		hint := ""
		if _, perr := client.CoordinationV1().Leases(lf.namespace).Get(ctx, annotations.PreviousLeaderLease, metav1.GetOptions{}); perr == nil {
			hint = fmt.Sprintf(" (Lease %s exists: an earlier tfccm release leads through it, or --lease %s)", annotations.PreviousLeaderLease, annotations.PreviousLeaderLease)
		}
		return leader{}, fmt.Errorf("no leader Lease %s/%s: %w%s", lf.namespace, lf.lease, errNoLease, hint)
	}
	if err != nil {
		return leader{}, readError(err, "get", "leases.coordination.k8s.io", lf.namespace, lf.lease)
	}
	return leaderOf(lease, lf, now)
}

// leaderOf reads a leader Lease.
func leaderOf(lease *coordinationv1.Lease, lf leaderFlags, now time.Time) (leader, error) {
	l := leader{identity: ptr.Deref(lease.Spec.HolderIdentity, "")}
	if l.identity == "" {
		return leader{}, fmt.Errorf("Lease %s/%s: %w", lf.namespace, lf.lease, errNoLeader)
	}
	l.pod, _, _ = strings.Cut(l.identity, "_")
	if pod := lease.Annotations[annotations.LeaderPod]; pod != "" && lease.Annotations[annotations.LeaderIdentity] == l.identity {
		l.pod = pod // named by the leader itself (host networking: the identity names the node)
	}
	if lease.Spec.AcquireTime != nil {
		l.since = lease.Spec.AcquireTime.Time
	}
	if lease.Spec.RenewTime != nil {
		l.renewed = lease.Spec.RenewTime.Time
	}
	l.duration = time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	if l.renewed.IsZero() || now.After(l.renewed.Add(l.duration)) {
		return l, fmt.Errorf("Lease %s/%s held by %s, last renewed %s ago (duration %s): %w",
			lf.namespace, lf.lease, l.identity, now.Sub(l.renewed).Round(time.Second), l.duration, errStaleLease)
	}
	return l, nil
}

// leaderPod reads the leader's pod.
func leaderPod(ctx context.Context, client kubernetes.Interface, namespace string, l leader) (*corev1.Pod, error) {
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, l.pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the leader %s names pod %s/%s, which does not exist (the CCM runs outside the cluster, or its pod is gone)", l.identity, namespace, l.pod)
	}
	if err != nil {
		return nil, readError(err, "get", "pods", namespace, l.pod)
	}
	return pod, nil
}

// permissionError is a read the user's RBAC refused, naming the right.
type permissionError struct {
	verb, what, where string
}

func (e *permissionError) Error() string {
	return fmt.Sprintf("no permission: you may not %s %s %s (ask the cluster admin for this RBAC right)", e.verb, e.what, e.where)
}

// readError names what RBAC refused (verb, resource, namespace, name), or
// wraps err with what was read.
func readError(err error, verb, resource, namespace, name string) error {
	what := resource
	if name != "" {
		what += " " + name
	}
	where := "in namespace " + namespace
	if namespace == "" {
		where = "cluster-wide"
	}
	if apierrors.IsForbidden(err) {
		return &permissionError{verb: verb, what: what, where: where}
	}
	return fmt.Errorf("%s %s %s: %w", verb, what, where, err)
}
