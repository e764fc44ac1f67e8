package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
)

// TestBaremetalVIPHolders: which LB host holds a VIP is visible and split
// brain and lost VIPs are caught (#48 items 3 and 4), on two LB hosts with
// health_interval = "1s". A failover (the master's keepalived stopped)
// shows in tfccm.io/VIPHeld within 5 s; VRRP blocked between the hosts
// (nft drops IP protocol 112 in lb-b's namespace) makes both hold the VIP:
// VIPHeld SplitBrain and tfccm_load_balancer_vip_holders 2 (the alert's
// expression, >= 2) within 10 s; unblocked, one holder again; the VIP
// deleted by hand on its holder is put back (keepalived) within 10 s and
// VIPHeld names one holder; keepalived stopped on both hosts gives
// NoHolder and vip_holders 0 within 10 s. The times are logged as FIGURE
// lines.
func TestBaremetalVIPHolders(t *testing.T) {
	b := newBaremetal(t, "")
	b.cfg, b.workDir = writeCloudConfig(t, b.dir, fmt.Sprintf("template_set = \"baremetal\"\nload_balancer {\n  health_interval = \"1s\"\n  settings = %s\n}\n",
		harness.HCLObject(b.hosts.LBSettings())))
	serveNodes(t, b.cloud, 30080)
	createNode(t, b.client, b.cloud, "node-a")
	b.startCCM(t)
	b.createService(t, "web", 80, 30080, "")
	vip := waitVIP(t, b.client, "web")
	backendsAre(t, vip, 80, "node-a")

	master := b.hosts.Master(vip)
	if master == nil {
		t.Fatalf("no host holds %s", vip)
	}
	heldBy(t, b, vip, time.Minute, master.Name)

	// Failover: the master's keepalived stops (priority-0 advert).
	start := time.Now()
	master.StopKeepalived(syscall.SIGTERM)
	other := otherHost(b, master)
	took := heldBy(t, b, vip, 5*time.Second, other.Name)
	t.Logf("FIGURE failover %s -> %s shown in VIPHeld after %s", master.Name, other.Name, took.Round(time.Millisecond))
	if err := master.StartKeepalived(); err != nil {
		t.Fatal(err)
	}
	heldBy(t, b, vip, 30*time.Second, other.Name) // nopreempt: it stays

	// Split brain: lb-b hears no VRRP and sends none.
	blocked := b.hosts.Host("lb-b")
	start = time.Now()
	blockVRRP(t, blocked)
	eventually(t, 10*time.Second, "both hosts hold "+vip, func(context.Context) error {
		for _, h := range b.hosts.Hosts {
			if !h.HasAddress(vip) {
				return fmt.Errorf("%s does not hold it", h.Name)
			}
		}
		return nil
	})
	both := time.Since(start)
	eventually(t, 10*time.Second, "VIPHeld SplitBrain and vip_holders 2", func(context.Context) error {
		_, c := conditionOf(t, b.client, "web", lbcontroller.ConditionVIPHeld)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != lbcontroller.CondReasonSplitBrain || !strings.Contains(c.Message, "IPv4 VIP held by lb-a and lb-b at once") {
			return fmt.Errorf("condition %+v", c)
		}
		if n, err := vipHolders(t, b); err != nil || n < 2 {
			return fmt.Errorf("tfccm_load_balancer_vip_holders %v (%v), want >= 2", n, err)
		}
		return nil
	})
	t.Logf("FIGURE split brain: both hosts held the VIP %s after the block; condition and metric (>= 2) after %s",
		both.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Unblocked: VRRP keeps one holder.
	start = time.Now()
	unblockVRRP(t, blocked)
	eventually(t, 10*time.Second, "one holder again", func(context.Context) error {
		_, c := conditionOf(t, b.client, "web", lbcontroller.ConditionVIPHeld)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != lbcontroller.CondReasonHeldBy {
			return fmt.Errorf("condition %+v", c)
		}
		if n, err := vipHolders(t, b); err != nil || n != 1 {
			return fmt.Errorf("tfccm_load_balancer_vip_holders %v (%v), want 1", n, err)
		}
		return nil
	})
	t.Logf("FIGURE split brain over: one holder in VIPHeld and the metric %s after the unblock", time.Since(start).Round(time.Millisecond))

	// Lost: the VIP deleted by hand on its holder.
	holder := b.hosts.Master(vip)
	if holder == nil {
		t.Fatalf("no host holds %s", vip)
	}
	start = time.Now()
	if out, err := exec.Command("ip", "-n", holder.Netns, "addr", "del", vip+"/32", "dev", b.hosts.Interface).CombinedOutput(); err != nil {
		t.Fatalf("ip addr del: %v: %s", err, out)
	}
	eventually(t, 10*time.Second, vip+" held again", func(context.Context) error {
		if b.hosts.Master(vip) == nil {
			return fmt.Errorf("no host holds %s", vip)
		}
		return nil
	})
	restored := time.Since(start)
	h := b.hosts.Master(vip)
	heldBy(t, b, vip, 10*time.Second, h.Name)
	t.Logf("FIGURE VIP deleted by hand on %s: held again (by %s) after %s, VIPHeld naming it after %s",
		holder.Name, h.Name, restored.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// Lost everywhere: keepalived stopped on both hosts (the VIP goes
	// with it): VIPHeld NoHolder and vip_holders 0 (TfccmVIPLost's
	// expression) within 10 s; started again, one holder.
	start = time.Now()
	for _, h := range b.hosts.Hosts {
		h.StopKeepalived(syscall.SIGTERM)
	}
	eventually(t, 10*time.Second, "VIPHeld NoHolder and vip_holders 0", func(context.Context) error {
		_, c := conditionOf(t, b.client, "web", lbcontroller.ConditionVIPHeld)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != lbcontroller.CondReasonNoHolder || c.Message != "IPv4 VIP held by no LB host that answers" {
			return fmt.Errorf("condition %+v", c)
		}
		if n, err := vipHolders(t, b); err != nil || n != 0 {
			return fmt.Errorf("tfccm_load_balancer_vip_holders %v (%v), want 0", n, err)
		}
		return nil
	})
	t.Logf("FIGURE no holder (keepalived stopped on both hosts): NoHolder and the metric 0 after %s", time.Since(start).Round(time.Millisecond))
	for _, h := range b.hosts.Hosts {
		if err := h.StartKeepalived(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 15*time.Second, "one holder after keepalived is back", func(context.Context) error {
		if n, err := vipHolders(t, b); err != nil || n != 1 {
			return fmt.Errorf("tfccm_load_balancer_vip_holders %v (%v), want 1", n, err)
		}
		return nil
	})

	if n, err := harness.EventCount(context.Background(), b.client, "default", "web", lbcontroller.ReasonApplyFailed); err != nil || n != 0 {
		t.Errorf("web has %d TerraformApplyFailed Events (%v), want none", n, err)
	}
}

// heldBy waits until web's VIPHeld is True naming host, and returns how
// long that took.
func heldBy(t *testing.T, b *baremetal, vip string, within time.Duration, host string) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, within, "VIPHeld naming "+host, func(context.Context) error {
		_, c := conditionOf(t, b.client, "web", lbcontroller.ConditionVIPHeld)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != lbcontroller.CondReasonHeldBy || c.Message != "IPv4 VIP held by "+host {
			return fmt.Errorf("condition %+v (holder now %v)", c, b.hosts.Master(vip))
		}
		return nil
	})
	return time.Since(start)
}

func otherHost(b *baremetal, h *hosttest.Host) *hosttest.Host {
	for _, o := range b.hosts.Hosts {
		if o != h {
			return o
		}
	}
	return nil
}

// blockVRRP drops VRRP (IP protocol 112, both families) in and out of
// h's namespace; the table goes with the test.
func blockVRRP(t *testing.T, h *hosttest.Host) {
	t.Helper()
	rules := "table inet tfccm_test_vrrp {\n" +
		"  chain in { type filter hook input priority -10; meta l4proto 112 drop; }\n" +
		"  chain out { type filter hook output priority -10; meta l4proto 112 drop; }\n}\n"
	cmd := exec.Command("ip", "netns", "exec", h.Netns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "exec", h.Netns, "nft", "delete", "table", "inet", "tfccm_test_vrrp").Run()
	})
}

func unblockVRRP(t *testing.T, h *hosttest.Host) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "exec", h.Netns, "nft", "delete", "table", "inet", "tfccm_test_vrrp").CombinedOutput(); err != nil {
		t.Fatalf("nft delete: %v: %s", err, out)
	}
}

var reVIPHolders = regexp.MustCompile(`(?m)^tfccm_load_balancer_vip_holders\{family="IPv4",service_name="web",service_namespace="default"\} (\S+)$`)

// vipHolders is web's IPv4 tfccm_load_balancer_vip_holders from the
// CCM's /metrics.
func vipHolders(t *testing.T, b *baremetal) (float64, error) {
	t.Helper()
	m := reVIPHolders.FindStringSubmatch(ccmMetrics(t, b.cluster, b.ccm))
	if m == nil {
		return 0, fmt.Errorf("no series")
	}
	var v float64
	_, err := fmt.Sscan(m[1], &v)
	return v, err
}
