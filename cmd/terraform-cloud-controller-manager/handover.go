package main

// The leader hand-over on shutdown. k8s.io/cloud-provider's app runs leader
// election with a context that is never cancelled
// (kubernetes/kubernetes#119905), so a stopping CCM never gives its Lease
// back and its successor waits out the lease duration (~15 s) before any
// Service change is processed. tfccm closes the app's stop channel on
// SIGTERM, stops its own work (the engine interrupts running tofu, which
// writes its state), and only then releases the Lease the way client-go's
// ReleaseOnCancel does (holder cleared, duration 1 s), if it still holds
// it: the successor takes it at its next retry. The Lease is released
// after the engine stopped, so two leaders never run tofu at once.

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tfccm/tfccm/ccm"
)

// stopWait bounds how long a stopping CCM waits for its engine (tofu
// interrupted, state written) before it releases the Lease anyway; the
// chart's terminationGracePeriodSeconds is longer.
const stopWait = 20 * time.Second

// handover is this process's part in the leader hand-over.
type handover struct {
	stopping <-chan struct{} // closed on SIGTERM or SIGINT

	mu       sync.Mutex
	cfg      *cloudcontrollerconfig.CompletedConfig
	cloud    *ccm.Cloud
	identity string // the Lease holder when this process started leading

	previousName string // --leader-elect-previous-lease
	previousHeld bool   // this leader took the previous Lease
}

// leadingCloud is the tfccm Cloud as the app sees it: Initialize, which
// the app calls once this process leads, records the leader's identity
// and stops the Cloud's work on SIGTERM too. Every other method, and the
// optional interfaces (InformerUser), are the Cloud's own.
type leadingCloud struct {
	*ccm.Cloud
	h *handover
}

// wrap remembers the app's configuration and the Cloud, and returns the
// Cloud the app drives.
func (h *handover) wrap(cfg *cloudcontrollerconfig.CompletedConfig, cloud *ccm.Cloud) cloudprovider.Interface {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg, h.cloud = cfg, cloud
	return &leadingCloud{Cloud: cloud, h: h}
}

// Initialize is called once this process leads (or at once without leader
// election).
func (c *leadingCloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.h.leading()
	merged := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-c.h.stopping:
		}
		close(merged)
	}()
	c.h.guardPrevious(merged)
	c.Cloud.Initialize(b, merged)
}

// guardPrevious, with --leader-elect-previous-lease, waits until this
// leader holds the previous Lease or it does not exist (previouslease.go),
// and keeps renewing it until stop; losing it ends the process as losing
// the leader Lease does.
func (h *handover) guardPrevious(stop <-chan struct{}) {
	h.mu.Lock()
	name, identity := h.previousName, h.identity
	h.mu.Unlock()
	if name == "" || identity == "" {
		return
	}
	le := h.cfg.ComponentConfig.Generic.LeaderElection
	p := &previousLease{leases: h.leases(), name: name, identity: identity,
		duration: le.LeaseDuration.Duration, retry: le.RetryPeriod.Duration, now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	held, err := p.take(ctx)
	if err != nil || !held {
		return
	}
	h.mu.Lock()
	h.previousHeld = true
	h.mu.Unlock()
	go func() {
		if err := p.hold(ctx); err != nil {
			klog.ErrorS(err, "leaderelection lost")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
	}()
}

// leading records the Lease's holder: this process, which has just taken
// it (the app initializes the cloud only after it leads).
func (h *handover) leading() {
	le := h.cfg.ComponentConfig.Generic.LeaderElection
	if !le.LeaderElect || le.ResourceLock != "leases" {
		return
	}
	lease, err := h.lease(context.Background())
	if err != nil {
		klog.ErrorS(err, "Read the leader Lease; it will not be released on shutdown")
		return
	}
	h.mu.Lock()
	h.identity = ptr.Deref(lease.Spec.HolderIdentity, "")
	h.mu.Unlock()
	nameLeaderPod(h.leases(), le.ResourceName, ptr.Deref(lease.Spec.HolderIdentity, ""))
}

// stop runs after the app returned on SIGTERM: it waits for the Cloud's
// work to end, then releases the Lease if this process still holds it.
func (h *handover) stop() {
	h.mu.Lock()
	cloud, identity := h.cloud, h.identity
	h.mu.Unlock()
	if identity == "" {
		return // never led, or no Lease to give back
	}
	select {
	case <-cloud.Stopped():
	case <-time.After(stopWait):
		klog.InfoS("The engine did not stop in time; releasing the leader Lease anyway", "waited", stopWait)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.mu.Lock()
	previous := h.previousHeld
	h.mu.Unlock()
	if previous {
		if err := h.release(ctx, h.previousName, identity); err != nil {
			klog.ErrorS(err, "Release the previous leader Lease; it expires on its own")
		}
	}
	le := h.cfg.ComponentConfig.Generic.LeaderElection
	if err := h.release(ctx, le.ResourceName, identity); err != nil {
		klog.ErrorS(err, "Release the leader Lease; the next leader waits for it to expire")
		return
	}
	klog.InfoS("Released the leader Lease", "identity", identity)
}

// release clears the Lease name's holder if it is still identity, as client-go's
// ReleaseOnCancel does. The update carries the read's resourceVersion, so
// a Lease taken by another process in between is never cleared.
func (h *handover) release(ctx context.Context, name, identity string) error {
	lease, err := h.leases().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Lease %s: %w", name, err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != identity {
		return nil // already someone else's
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.HolderIdentity = nil
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	_, err = h.leases().Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// lease reads the leader Lease.
func (h *handover) lease(ctx context.Context) (*coordinationv1.Lease, error) {
	le := h.cfg.ComponentConfig.Generic.LeaderElection
	l, err := h.leases().Get(ctx, le.ResourceName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("leader Lease %s/%s: %w", le.ResourceNamespace, le.ResourceName, err)
	}
	return l, nil
}

func (h *handover) leases() leaseClient {
	client := kubernetes.NewForConfigOrDie(h.cfg.Kubeconfig)
	return client.CoordinationV1().Leases(h.cfg.ComponentConfig.Generic.LeaderElection.ResourceNamespace)
}

// leaseClient is what the hand-over does with Leases.
type leaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}
