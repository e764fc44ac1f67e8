package main

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
)

const guardNS = "tfccm-system"

// oldPod runs client-go's leader election on the previous Lease, as a pod
// of an earlier release does; leading reports whether it leads now.
type oldPod struct {
	elector *leaderelection.LeaderElector
	cancel  context.CancelFunc
}

func startOldPod(t *testing.T, client kubernetes.Interface, identity string) *oldPod {
	t.Helper()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: guardNS, Name: annotations.PreviousLeaderLease},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	ctx, cancel := context.WithCancel(context.Background())
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond,
		ReleaseOnCancel: true,
		Callbacks:       leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { le.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &oldPod{elector: le, cancel: cancel}
}

func holder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases(guardNS).Get(context.Background(), annotations.PreviousLeaderLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPreviousLeaseGuard: during an upgrade, a new leader starts no work
// while a pod of the earlier release leads through the previous Lease
// (client-go's election against a real apiserver), takes that Lease once
// it is given back, and while it renews it another old pod never leads;
// once it stops renewing, the old pod leads again (the guard, nothing
// else, kept it off). Without a previous Lease the guard returns at once
// and creates none.
func TestPreviousLeaseGuard(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guardNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	guard := &previousLease{leases: client.CoordinationV1().Leases(guardNS), name: annotations.PreviousLeaderLease,
		identity: "new-c_1", duration: 4 * time.Second, retry: 200 * time.Millisecond, now: time.Now}

	held, err := guard.take(ctx)
	if err != nil || held {
		t.Fatalf("no previous Lease: held %v, %v", held, err)
	}
	if _, err := client.CoordinationV1().Leases(guardNS).Get(ctx, annotations.PreviousLeaderLease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the guard created the previous Lease: %v", err)
	}

	oldA := startOldPod(t, client, "old-a_1")
	waitFor(t, 20*time.Second, "old pod a leads", oldA.elector.IsLeader)
	taken := make(chan error, 1)
	go func() {
		held, err := guard.take(ctx)
		if err == nil && !held {
			err = context.Canceled // not expected: the Lease exists
		}
		taken <- err
	}()
	select {
	case err := <-taken:
		t.Fatalf("the new leader went ahead while an old pod leads (%v)", err)
	case <-time.After(6 * time.Second): // longer than the Lease duration: a.renews
	}

	oldA.cancel() // the rollout deletes old pod a: it releases the Lease
	select {
	case err := <-taken:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the guard did not take the released Lease")
	}
	if h := holder(t, client); h != "new-c_1" {
		t.Fatalf("previous Lease held by %q after the guard took it", h)
	}

	holdCtx, stopHold := context.WithCancel(ctx)
	held2 := make(chan error, 1)
	go func() { held2 <- guard.hold(holdCtx) }()
	oldB := startOldPod(t, client, "old-b_1")
	time.Sleep(10 * time.Second) // 2.5 Lease durations
	if oldB.elector.IsLeader() || holder(t, client) != "new-c_1" {
		t.Fatalf("an old pod leads while the new leader holds the previous Lease (holder %q)", holder(t, client))
	}
	stopHold()
	if err := <-held2; err != nil {
		t.Fatalf("hold: %v", err)
	}
	waitFor(t, 15*time.Second, "old pod b leads once the guard stopped renewing", oldB.elector.IsLeader)
}

// TestPreviousLeaseLive is the guard's rule for a Lease still held.
func TestPreviousLeaseLive(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &previousLease{identity: "me_1", now: func() time.Time { return now }}
	at := func(ago time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(-ago)); return &m }
	for _, tc := range []struct {
		name   string
		holder string
		renew  *metav1.MicroTime
		live   bool
	}{
		{"renewed within its duration", "old_1", at(5 * time.Second), true},
		{"expired", "old_1", at(20 * time.Second), false},
		{"released (no holder)", "", at(time.Second), false},
		{"held by this leader", "me_1", at(time.Second), false},
		{"never renewed", "old_1", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := leaseWith(tc.holder, tc.renew)
			if got := p.live(l); got != tc.live {
				t.Errorf("live %v, want %v", got, tc.live)
			}
		})
	}
}

func leaseWith(holder string, renew *metav1.MicroTime) *coordinationv1.Lease {
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: renew, LeaseDurationSeconds: ptr.To[int32](15)}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	return l
}

// TestCCMWaitsForPreviousLeader runs the CCM binary as the chart runs it
// on an upgrade (--leader-elect-previous-lease) while a pod of an earlier
// release leads through the previous Lease: the CCM takes its own Lease
// but starts no controller until the old pod gives the previous Lease
// back; then it holds both, and on SIGTERM it gives both back.
func TestCCMWaitsForPreviousLeader(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guardNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	old := startOldPod(t, client, "old-a_1")
	waitFor(t, 20*time.Second, "the old pod leads", old.elector.IsLeader)

	ccm := startCCM(t, cluster, nil, "--leader-elect-resource-namespace="+guardNS, "--"+previousLeaseFlag+"="+annotations.PreviousLeaderLease)
	const started = "Serving LoadBalancer Services" // the Cloud's class loop: its controllers run
	leaseHolder := func(name string) string {
		l, err := client.CoordinationV1().Leases(guardNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	waitFor(t, 60*time.Second, "the CCM takes its own Lease and waits for the old leader", func() bool {
		return leaseHolder(annotations.LeaderLease) != "" && strings.Contains(ccm.output(), "Waiting for the leader of an earlier tfccm release")
	})
	time.Sleep(5 * time.Second) // more than a Lease duration of the old pod's
	if strings.Contains(ccm.output(), started) || holder(t, client) != "old-a_1" {
		t.Fatalf("the CCM started its controllers while an old pod leads (previous Lease held by %q):\n%s", holder(t, client), ccm.output())
	}

	old.cancel() // the rollout deletes the old pod: it gives its Lease back
	waitFor(t, 30*time.Second, "the CCM starts once it holds the previous Lease too", func() bool {
		return strings.Contains(ccm.output(), started)
	})
	me := leaseHolder(annotations.LeaderLease)
	if got := holder(t, client); got != me {
		t.Fatalf("previous Lease held by %q, the CCM leads as %q", got, me)
	}
	ccm.stop()
	if a, b := leaseHolder(annotations.LeaderLease), holder(t, client); a != "" || b != "" {
		t.Errorf("after SIGTERM the Leases are held by %q and %q, want both given back", a, b)
	}
}
