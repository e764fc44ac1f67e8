package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// TestLeaderHandOverOnStop: two replicas with the binary's own leader
// election settings (as the chart runs them). The leader gets SIGTERM, as
// a pod does in a rolling upgrade, while its tofu applies: it interrupts
// tofu (which writes its state and unlocks), gives the Lease back, and the
// other replica leads within 2 s of its exit — not a lease duration
// (15 s) later — and finishes the load balancer. The Lease is given back
// only at the end: the standby never holds it while the leader runs.
func TestLeaderHandOverOnStop(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	blocks := slowReplicaBlocks(t, cluster)
	cfgA, _ := writeCloudConfig(t, t.TempDir(), blocks)
	cfgB, _ := writeCloudConfig(t, t.TempDir(), blocks)
	start := func(cfg, host string) *harness.CCM {
		c, err := harness.StartCCM(harness.CCMOptions{Binary: ccmBinary(t), Kubeconfig: cluster.Kubeconfig(), CloudConfig: cfg,
			Dir: t.TempDir(), Hostname: host, StopGrace: 40 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Kill() })
		return c
	}
	leader := func(ctx context.Context) string { return leaseHolder(ctx, client) }
	a := start(cfgA, "tfccm-a")
	eventually(t, time.Minute, "replica a leads", func(ctx context.Context) error {
		if !strings.HasPrefix(leader(ctx), "tfccm-a_") {
			return fmt.Errorf("leader %q", leader(ctx))
		}
		return nil
	})
	b := start(cfgB, "tfccm-b")
	eventually(t, time.Minute, "replica b waits for the Lease", func(context.Context) error {
		if !strings.Contains(b.Log(), "Attempting to acquire leader lease") {
			return fmt.Errorf("replica b is not electing yet")
		}
		return nil
	})
	serveWebUntilApplyOfA(t, client)

	// Watch the Lease every 20ms while a stops: when b first holds it.
	var (
		mu     sync.Mutex
		bLeads time.Time
	)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			if strings.HasPrefix(leader(watchCtx), "tfccm-b_") {
				mu.Lock()
				bLeads = time.Now()
				mu.Unlock()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	signalled := time.Now()
	a.Stop() // SIGTERM, then waits for the process
	exited := time.Now()
	eventually(t, 10*time.Second, "replica b takes the leader Lease", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if bLeads.IsZero() {
			return fmt.Errorf("leader %q", leader(ctx))
		}
		return nil
	})
	mu.Lock()
	gap, stopping := bLeads.Sub(exited), exited.Sub(signalled)
	mu.Unlock()
	t.Logf("replica a stopped %s after SIGTERM; replica b led %s after a exited", stopping.Round(10*time.Millisecond), gap.Round(10*time.Millisecond))
	if !strings.Contains(a.Log(), "Released the leader Lease") {
		t.Errorf("replica a did not release the Lease; its log ends:\n%s", tail(a.LogPath, 20))
	}
	if gap > 2*time.Second {
		t.Errorf("replica b led %s after replica a exited, want <= 2s", gap)
	}
	// Released only once a's engine stopped: b cannot have led long
	// before a exited (the release is a's last step before it exits).
	if gap < -time.Second {
		t.Errorf("replica b led %s before replica a exited: two leaders", -gap)
	}
	// The interrupted apply's lock was released by tofu itself: b applies.
	if ip := waitVIP(t, client, "web"); ip != "192.0.2.10" {
		t.Errorf("ingress %s", ip)
	}
}
