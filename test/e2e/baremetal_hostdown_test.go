package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TestBaremetalFirstHostDown: no LB host is special (#48). With the first
// host by name powered off (its sshd and keepalived stopped) a new
// Service gets its VIP and is served through the other host about as fast
// as with both up, with Degraded naming the missing host and no failure
// Event; when the host is back the drift check catches it up with the
// same VIP and VRRP id, replacing nothing; when it is replaced (same name,
// config dir wiped) every VIP keeps its address and id.
func TestBaremetalFirstHostDown(t *testing.T) {
	b := newBaremetal(t, "3s")
	ctx := context.Background()
	serveNodes(t, b.cloud, 30080, 30081)
	createNode(t, b.client, b.cloud, "node-a")
	createNode(t, b.client, b.cloud, "node-b")
	b.startCCM(t)
	first, other := b.hosts.Host("lb-a"), b.hosts.Host("lb-b")

	start := time.Now()
	b.createService(t, "web", 80, 30080, "")
	vip := waitVIP(t, b.client, "web")
	backendsAre(t, vip, 80, "node-a", "node-b")
	usual := time.Since(start)
	t.Logf("FIGURE a new Service with both hosts up: served after %s", usual.Round(time.Millisecond))

	// The first host powered off.
	first.StopSSHD()
	first.StopKeepalived(syscall.SIGKILL)
	powered := false
	defer func() {
		if !powered {
			_ = first.StartSSHD()
			_ = first.StartKeepalived()
		}
	}()
	backendsAre(t, vip, 80, "node-a", "node-b") // web failed over to lb-b
	since := time.Now().Add(-time.Second)
	start = time.Now()
	b.createService(t, "web2", 81, 30081, "")
	vip2 := waitVIP(t, b.client, "web2")
	backendsAre(t, vip2, 81, "node-a", "node-b")
	down := time.Since(start)
	t.Logf("FIGURE a new Service with the first host down: served after %s (both up: %s)", down.Round(time.Millisecond), usual.Round(time.Millisecond))
	if m := b.hosts.Master(vip2); m != other {
		t.Errorf("VRRP master of %s: %v, want lb-b", vip2, m)
	}
	eventually(t, time.Minute, "web2 Degraded naming lb-a", func(context.Context) error {
		if _, c := conditionOf(t, b.client, "web2", "tfccm.io/Degraded"); c == nil || c.Status != metav1.ConditionTrue ||
			c.Reason != lbcontroller.CondReasonLBHostUnreachable || !strings.Contains(c.Message, "LB host lb-a is unreachable") {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if w := warningsSince(ctx, t, b.client, "web2", since); len(w) > 0 {
		t.Errorf("warnings on web2 with lb-a down (want none: its part waits): %v", w)
	}
	owner2 := ownerOf(t, other, vip2)
	id2 := vridOf(t, other, owner2)
	owner := ownerOf(t, other, vip)
	id := vridOf(t, other, owner)

	// Back: the drift check catches it up, same VIP and id, nothing replaced.
	if err := first.StartSSHD(); err != nil {
		t.Fatal(err)
	}
	if err := first.StartKeepalived(); err != nil {
		t.Fatal(err)
	}
	powered = true
	back := time.Now()
	eventually(t, 2*time.Minute, "lb-a caught up", func(context.Context) error {
		if _, err := os.Stat(filepath.Join(first.ConfigDir, "fragments", owner2+".cfg")); err != nil {
			return err
		}
		if got := vridOf(t, first, owner2); got != id2 {
			return fmt.Errorf("lb-a's VRRP id of web2 %s, want %s", got, id2)
		}
		return nil
	})
	t.Logf("FIGURE lb-a caught up %s after it was back", time.Since(back).Round(time.Millisecond))
	eventually(t, time.Minute, "web2 not Degraded", func(context.Context) error {
		if _, c := conditionOf(t, b.client, "web2", "tfccm.io/Degraded"); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	checkKept(t, b, map[string]string{"web": vip, "web2": vip2}, map[string]string{owner: id, owner2: id2})

	// Replaced: the same name, an empty config dir.
	if err := first.Wipe(); err != nil {
		t.Fatal(err)
	}
	wiped := time.Now()
	eventually(t, 2*time.Minute, "lb-a restored", func(context.Context) error {
		for o, want := range map[string]string{owner: id, owner2: id2} {
			if _, err := os.Stat(filepath.Join(first.ConfigDir, "keepalived", o+".conf")); err != nil {
				return err
			}
			if got := vridOf(t, first, o); got != want {
				return fmt.Errorf("lb-a's VRRP id of %s %s, want %s", o, got, want)
			}
		}
		return nil
	})
	t.Logf("FIGURE lb-a replaced: restored %s after the wipe", time.Since(wiped).Round(time.Millisecond))
	checkKept(t, b, map[string]string{"web": vip, "web2": vip2}, map[string]string{owner: id, owner2: id2})
	// lb-a serves both again: make it the master of each.
	other.StopKeepalived(syscall.SIGTERM)
	backendsAre(t, vip, 80, "node-a", "node-b")
	backendsAre(t, vip2, 81, "node-a", "node-b")
	if err := other.StartKeepalived(); err != nil {
		t.Fatal(err)
	}
	if n, err := harness.EventCount(ctx, b.client, "default", "web2", lbcontroller.ReasonApplyFailed); err != nil || n != 0 {
		t.Errorf("web2 has %d TerraformApplyFailed Events (%v), want none", n, err)
	}
}

// checkKept: every Service keeps its VIP and every owner its VRRP id on
// both hosts.
func checkKept(t *testing.T, b *baremetal, vips map[string]string, ids map[string]string) {
	t.Helper()
	for name, want := range vips {
		if got := waitVIP(t, b.client, name); got != want {
			t.Errorf("%s's VIP %s, want %s kept", name, got, want)
		}
	}
	for _, h := range b.hosts.Hosts {
		for o, want := range ids {
			if got := vridOf(t, h, o); got != want {
				t.Errorf("%s: VRRP id of %s %s, want %s kept", h.Name, o, got, want)
			}
		}
	}
}

var reVRIDLine = regexp.MustCompile(`virtual_router_id (\d+)`)

// vridOf is the virtual router id of owner's VRRP instance on h ("" none).
func vridOf(t *testing.T, h *hosttest.Host, owner string) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(h.ConfigDir, "keepalived", owner+".conf"))
	if m := reVRIDLine.FindStringSubmatch(string(data)); m != nil {
		return m[1]
	}
	return ""
}

// ownerOf is who claims vip on h.
func ownerOf(t *testing.T, h *hosttest.Host, vip string) string {
	t.Helper()
	owner, _, _ := strings.Cut(strings.TrimSpace(string(mustReadFile(t, filepath.Join(h.ConfigDir, "claims", vip)))), " ")
	return owner
}
