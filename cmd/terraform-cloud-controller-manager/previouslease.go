package main

// The upgrade guard over the leader Lease of earlier releases. tfccm's
// leader Lease is its own (annotations.LeaderLease); releases before it
// led through upstream's default, cloud-controller-manager. During a
// rolling upgrade the old pods still elect through that Lease while the
// new ones elect through the new one: without a guard, one old and one new
// pod would lead (and run tofu) at once. With --leader-elect-previous-lease
// a new leader, before any controller starts, waits until that Lease has
// no live holder, takes it and renews it while it leads, so an old pod
// cannot lead meanwhile; it gives it back on shutdown with its own. A
// previous Lease that does not exist is never created: nothing of an
// earlier release leads, and another CCM that may start later keeps its
// upstream default free.

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// previousLeaseFlag names the previous Lease to guard ("" guards none).
const previousLeaseFlag = "leader-elect-previous-lease"

// waitLogEvery is how often a leader waiting for the previous Lease says so.
const waitLogEvery = 30 * time.Second

// previousLease is one leader's hold on the previous Lease.
type previousLease struct {
	leases   leaseClient
	name     string
	identity string        // this leader's, as in its own Lease
	duration time.Duration // how long a taken Lease is valid without a renewal
	retry    time.Duration // how often to try and renew it
	now      func() time.Time
}

// errPreviousLeaseLost: another holder took the previous Lease while this
// process led (it missed renewals for a whole lease duration).
var errPreviousLeaseLost = fmt.Errorf("lost the previous leader Lease")

// take waits until the previous Lease is absent (held = false), or free
// and then taken by this leader (held = true), or ctx ends.
func (p *previousLease) take(ctx context.Context) (held bool, err error) {
	lastLog := time.Time{}
	for {
		lease, err := p.leases.Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			klog.ErrorS(err, "Read the previous leader Lease", "lease", p.name)
		case p.live(lease):
			if p.now().Sub(lastLog) >= waitLogEvery {
				lastLog = p.now()
				klog.InfoS("Waiting for the leader of an earlier tfccm release to give up its Lease before leading (see docs/operations.md#upgrade; if another cloud-controller-manager uses this Lease, set --"+previousLeaseFlag+"= empty)",
					"lease", p.name, "holder", ptr.Deref(lease.Spec.HolderIdentity, ""))
			}
		default:
			if err := p.write(ctx, lease); err == nil {
				klog.InfoS("Took the previous leader Lease: no pod of an earlier release can lead while this one does", "lease", p.name)
				return true, nil
			} else if !apierrors.IsConflict(err) {
				klog.ErrorS(err, "Take the previous leader Lease", "lease", p.name)
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(p.retry):
		}
	}
}

// live: lease has a holder other than this leader whose last renewal is
// younger than its duration.
func (p *previousLease) live(lease *coordinationv1.Lease) bool {
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || holder == p.identity || lease.Spec.RenewTime == nil {
		return false
	}
	d := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	return p.now().Before(lease.Spec.RenewTime.Add(d))
}

// write makes this leader lease's holder, renewed now; the update carries
// the read's resourceVersion, so a Lease taken meanwhile is not overwritten.
func (p *previousLease) write(ctx context.Context, lease *coordinationv1.Lease) error {
	now := metav1.NewMicroTime(p.now())
	if ptr.Deref(lease.Spec.HolderIdentity, "") != p.identity {
		lease.Spec.AcquireTime = &now
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	lease.Spec.HolderIdentity = ptr.To(p.identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(p.duration / time.Second))
	lease.Spec.RenewTime = &now
	_, err := p.leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// hold renews the taken Lease every retry period until ctx ends. It
// returns errPreviousLeaseLost if another holder has it (after this
// leader failed to renew it for a lease duration); failed renewals are
// retried.
func (p *previousLease) hold(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.retry):
		}
		lease, err := p.leases.Get(ctx, p.name, metav1.GetOptions{})
		if err == nil && ptr.Deref(lease.Spec.HolderIdentity, "") != p.identity && p.live(lease) {
			return fmt.Errorf("%w %s: held by %s", errPreviousLeaseLost, p.name, ptr.Deref(lease.Spec.HolderIdentity, ""))
		}
		if err == nil {
			err = p.write(ctx, lease)
		}
		if err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Renew the previous leader Lease", "lease", p.name)
		}
	}
}
