package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

// TestMigrateFromMetalLBTakeover walks the prepare-then-take-over
// migration of docs/migrate-from-metallb.md beside MetalLB's controller and
// its speakers (setUpMigration): tfccm starts while MetalLB still serves,
// with compat { metallb = true, metallb_takeover = "prepare" }; each
// Service's load balancer is applied without its VIP (Programmed=False
// Prepared, the status left as MetalLB wrote it, the address not raised).
// Then the admin takes the Services over one address at a time with
// `tfccm takeover`: tfccm raises the VIP (one in-place apply), and the
// speakers' route to the address is withdrawn — for "chosen" in the
// reverse order (withdrawn first), to measure which is shorter. MetalLB's
// controller stops last. Then the take-over list is deleted: no address
// is withdrawn (the take-over is one-way). No Service is edited, every
// address is kept, and each Service's interruption (the longest run
// without an answer, probed every 100 ms from the host) is at most 3 s in
// the take-over-first order.
func TestMigrateFromMetalLBTakeover(t *testing.T) {
	m := setUpMigration(t)
	ctx, c, client := context.Background(), m.c, m.client
	cli := repo.Build(t, "./cmd/tfccm")
	vipUp := func(ip string) bool {
		out, _ := exec.Command("ip", "-n", c.Cloud.CloudNetns, "-4", "addr", "show").CombinedOutput()
		return strings.Contains(string(out), " "+ip+"/32 ")
	}

	start := time.Now()
	for _, p := range m.probes {
		p.reset() // the interruptions from tfccm's start on
	}
	ccm := startTfccmEdit(t, c, func(cfg *harness.CloudConfig) {
		cfg.Blocks = strings.Replace(cfg.Blocks, "load_balancer {\n",
			fmt.Sprintf("load_balancer {\n  address_pool \"migrate\" {\n    addresses = [%q]\n  }\n", m.mlbRange), 1)
		cfg.Blocks += "compat {\n  metallb          = true\n  metallb_takeover = \"prepare\"\n}\n"
	})
	t.Logf("tfccm started beside MetalLB in %s (its log: %s)", time.Since(start).Round(10*time.Millisecond), ccm.LogPath)
	for _, s := range m.specs {
		err := harness.Eventually(ctx, 4*time.Minute, s.name+" prepared", func(ctx context.Context) error {
			return programmedReason(ctx, c, s.name, "Prepared")
		})
		if err != nil {
			t.Fatalf("%v\nServices' events: %s", err, harness.Events(ctx, client, "default", s.name))
		}
	}
	t.Logf("every Service prepared %s after tfccm started", time.Since(start).Round(10*time.Millisecond))
	for _, s := range m.specs {
		got := getService(t, client, s.name)
		if len(got.Status.LoadBalancer.Ingress) != 1 || got.Status.LoadBalancer.Ingress[0].IP != m.ips[s.name] {
			t.Errorf("%s: status %+v while prepared, want MetalLB's %s", s.name, got.Status.LoadBalancer.Ingress, m.ips[s.name])
		}
		if vipUp(m.ips[s.name]) {
			t.Errorf("%s: %s raised in the cloud while prepared (MetalLB still announces it)", s.name, m.ips[s.name])
		}
	}

	// The take-over, address by address.
	for _, group := range [][]string{{"picked"}, {"chosen"}, {"shared-http", "shared-alt"}} {
		ip := m.ips[group[0]]
		reverse := group[0] == "chosen"
		t0 := time.Now()
		if reverse {
			if err := m.route("del", ip); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"takeover", "--kubeconfig", c.Kubeconfig()}
		for _, n := range group {
			args = append(args, "default/"+n)
		}
		if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
			t.Fatalf("tfccm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		err := harness.Eventually(ctx, 2*time.Minute, ip+" raised", func(context.Context) error {
			if !vipUp(ip) {
				return fmt.Errorf("not on the cloud's router yet")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%v\nServices' events: %s", err, harness.Events(ctx, client, "default", group[0]))
		}
		raised := time.Since(t0)
		if !reverse {
			if err := m.route("del", ip); err != nil {
				t.Fatal(err)
			}
		}
		order := "taken over, then its speakers' route withdrawn"
		if reverse {
			order = "its speakers' route withdrawn, then taken over"
		}
		t.Logf("%s (%s): raised %s after tfccm takeover (%s)", strings.Join(group, ", "), ip, raised.Round(10*time.Millisecond), order)
	}
	m.stopMetalLB()
	for _, s := range m.specs {
		if err := harness.Eventually(ctx, 2*time.Minute, s.name+" programmed", func(ctx context.Context) error {
			return programmedReason(ctx, c, s.name, "Applied")
		}); err != nil {
			t.Errorf("%v\nServices' events: %s", err, harness.Events(ctx, client, "default", s.name))
		}
	}
	checkTakeoverOneWay(t, client, ccm, m.specs, m.ips, vipUp)
	time.Sleep(2 * time.Second) // answers after the last change
	for _, s := range m.specs {
		p := m.probes[s.name]
		p.stop()
		got := getService(t, client, s.name)
		ip := ""
		if len(got.Status.LoadBalancer.Ingress) > 0 {
			ip = got.Status.LoadBalancer.Ingress[0].IP
		}
		if ip != m.ips[s.name] {
			t.Errorf("%s: address %s after the migration, was %s", s.name, ip, m.ips[s.name])
		}
		if !vipUp(m.ips[s.name]) {
			t.Errorf("%s: %s not on the cloud's router after the take-over", s.name, m.ips[s.name])
		}
		gap := p.longest()
		t.Logf("%s (%s:%d): interruption %s (no answer from %s to %s after tfccm started)",
			s.name, m.ips[s.name], s.port, gap.Round(10*time.Millisecond), p.gapFrom().Sub(start).Round(10*time.Millisecond), p.gapTo().Sub(start).Round(10*time.Millisecond))
		if s.name != "chosen" && gap > 3*time.Second {
			t.Errorf("%s: interruption %s, want at most 3 s", s.name, gap.Round(10*time.Millisecond))
		}
	}
	// As in the stop-and-start way: the addresses were kept from the
	// status, and nothing warned; each Service was taken over once.
	for _, s := range m.specs {
		assigned, taken := 0, 0
		for _, ev := range strings.Split(harness.Events(ctx, client, "default", s.name), " | ") {
			if strings.HasPrefix(ev, "Warning ") && !notTheLoadBalancers(ev) {
				t.Errorf("%s: Event during the migration: %s", s.name, ev)
			}
			if strings.Contains(ev, "LoadBalancerIPAssigned") {
				assigned++
				if !strings.Contains(ev, "address "+m.ips[s.name]+" ") || !strings.Contains(ev, "kept from the Service's status") {
					t.Errorf("%s: %s, want its address %s kept from its status", s.name, ev, m.ips[s.name])
				}
			}
			if strings.Contains(ev, "LoadBalancerTakenOver") {
				taken++
			}
		}
		if assigned != 1 || taken != 1 {
			t.Errorf("%s: %d LoadBalancerIPAssigned and %d LoadBalancerTakenOver Events, want 1 of each", s.name, assigned, taken)
		}
	}
}

// programmedReason fails unless the Service's tfccm.io/Programmed
// condition has reason.
func programmedReason(ctx context.Context, c *Cluster, name, reason string) error {
	return programmedReasonOf(ctx, c.Client(), name, reason)
}

// programmedReasonOf is programmedReason with the cluster's client.
func programmedReasonOf(ctx context.Context, client kubernetes.Interface, name, reason string) error {
	svc, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range svc.Status.Conditions {
		if cond.Type == "tfccm.io/Programmed" {
			if cond.Reason != reason {
				return fmt.Errorf("%s: Programmed %s %s: %s, want reason %s", name, cond.Status, cond.Reason, cond.Message, reason)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: no Programmed condition yet", name)
}

// checkTakeoverOneWay checks the take-over's one-way rule after every
// Service was taken over: the take-over list (the ConfigMap
// tfccm-takeover) is deleted, as before setting metallb_takeover = "now"
// or by a GitOps tool; once the CCM has read the list without them, for
// a few seconds no Service's address is withdrawn (held says whether an
// address is announced) and none is prepared again.
func checkTakeoverOneWay(t *testing.T, client kubernetes.Interface, ccm *harness.CCM, specs []svcSpec, ips map[string]string, held func(ip string) bool) {
	t.Helper()
	ctx := context.Background()
	const lost = `"Take-over list changed" all=false services=0`
	seen := strings.Count(ccmLog(ccm), lost)
	if err := client.CoreV1().ConfigMaps("kube-system").Delete(ctx, "tfccm-takeover", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the take-over list: %v", err)
	}
	if err := harness.Eventually(ctx, time.Minute, "the CCM read the list without the Services", func(context.Context) error {
		if strings.Count(ccmLog(ccm), lost) <= seen {
			return fmt.Errorf("no %s in its log yet", lost)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	withdrawn, prepared := map[string]bool{}, map[string]bool{}
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, s := range specs {
			if !held(ips[s.name]) {
				withdrawn[ips[s.name]] = true
			}
			if err := programmedReasonOf(ctx, client, s.name, "Applied"); err != nil {
				prepared[s.name] = true
				t.Logf("after the list was deleted: %v", err)
			}
		}
	}
	addrs := map[string]bool{}
	for _, s := range specs {
		addrs[ips[s.name]] = true
	}
	t.Logf("take-over list deleted: %d of %d addresses withdrawn, %d of %d Services not Applied in the 8 s after the CCM read it",
		len(withdrawn), len(addrs), len(prepared), len(specs))
	if len(withdrawn) > 0 || len(prepared) > 0 {
		t.Errorf("the take-over was undone by deleting its list: withdrawn %v, not Applied %v", withdrawn, prepared)
	}
}

// ccmLog is the CCM's log so far.
func ccmLog(ccm *harness.CCM) string {
	b, _ := os.ReadFile(ccm.LogPath)
	return string(b)
}
