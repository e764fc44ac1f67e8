package nodes

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

// TestMigrateFromMetalLB walks docs/migrate-from-metallb.md on two real
// nodes: MetalLB's controller (built from the module proxy) serves four
// class-less Services from an IPAddressPool inside the local cloud's VIP
// pool, one with an address it picked, one with a chosen address
// (metallb.universe.tf/loadBalancerIPs) and two sharing one address
// (allow-shared-ip, two ports). Its speakers are stood in for as MetalLB's
// BGP mode would have a router learn them: a /32 route per address to
// node-a in the cloud's router, and kube-proxy on the node serves it. The
// migration stops MetalLB and withdraws the routes, then starts tfccm with
// a pool mirroring MetalLB's and compat { metallb = true }, editing no
// Service. Every Service keeps its address, is served through tfccm's VIP,
// and its interruption (the longest run without an answer, probed every
// 100 ms from the host) is logged.
func TestMigrateFromMetalLB(t *testing.T) {
	m := setUpMigration(t)
	ctx, c, client, specs, ips, probes := context.Background(), m.c, m.client, m.specs, m.ips, m.probes
	mlbRange, stopMetalLB, routed, route := m.mlbRange, m.stopMetalLB, m.routed, m.route
	// The migration: MetalLB stops, its announcements go, tfccm starts
	// with the same pool and MetalLB's annotations read.
	start := time.Now()
	stopMetalLB()
	for ip := range routed {
		if err := route("del", ip); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("MetalLB stopped and its announcements withdrawn %s after the migration started", time.Since(start).Round(10*time.Millisecond))
	moved := startTfccmEdit(t, c, func(cfg *harness.CloudConfig) {
		cfg.Blocks = strings.Replace(cfg.Blocks, "load_balancer {\n",
			fmt.Sprintf("load_balancer {\n  address_pool \"migrate\" {\n    addresses = [%q]\n  }\n", mlbRange), 1)
		cfg.Blocks += "compat {\n  metallb = true\n}\n"
	})
	t.Logf("tfccm started %s after the migration started (its log: %s)", time.Since(start).Round(10*time.Millisecond), moved.LogPath)
	for _, s := range specs {
		p := probes[s.name]
		if err := p.waitUpAfter(start, 4*time.Minute); err != nil {
			t.Fatalf("%s after the migration: %v\nServices' events: %s", s.name, err, harness.Events(ctx, client, "default", s.name))
		}
	}
	for _, s := range specs {
		p := probes[s.name]
		p.stop()
		got := getService(t, client, s.name)
		ip := ""
		if len(got.Status.LoadBalancer.Ingress) > 0 {
			ip = got.Status.LoadBalancer.Ingress[0].IP
		}
		if ip != ips[s.name] {
			t.Errorf("%s: address %s after the migration, was %s", s.name, ip, ips[s.name])
		}
		t.Logf("%s (%s:%d): interruption %s (no answer from %s to %s after the migration started)",
			s.name, ips[s.name], s.port, p.longest().Round(10*time.Millisecond), p.gapFrom().Sub(start).Round(10*time.Millisecond), p.gapTo().Sub(start).Round(10*time.Millisecond))
	}
	// Restored from their status, the addresses are kept and each Service
	// gets one LoadBalancerIPAssigned saying so (docs/migrate-from-metallb.md),
	// and no Warning but MetalLB's own about its old annotation forms.
	for _, s := range specs {
		assigned := 0
		for _, ev := range strings.Split(harness.Events(ctx, client, "default", s.name), " | ") {
			if strings.HasPrefix(ev, "Warning ") && !notTheLoadBalancers(ev) {
				t.Errorf("%s: Event during the migration: %s", s.name, ev)
			}
			if strings.Contains(ev, "LoadBalancerIPAssigned") {
				assigned++
				if !strings.Contains(ev, "address "+ips[s.name]+" ") || !strings.Contains(ev, "kept from the Service's status") {
					t.Errorf("%s: %s, want its address %s kept from its status", s.name, ev, ips[s.name])
				}
			}
		}
		if assigned != 1 {
			t.Errorf("%s: %d LoadBalancerIPAssigned Events, want 1", s.name, assigned)
		}
	}
}

// migration is MetalLB serving the four Services of the migration tests,
// each probed every 100 ms from the host.
type migration struct {
	c           *Cluster
	client      kubernetes.Interface
	kubectl     func(stdin string, args ...string)
	specs       []svcSpec
	ips         map[string]string // by Service: MetalLB's address
	routed      map[string]bool   // the addresses "its speakers" route to node-a
	route       func(op, ip string) error
	probes      map[string]*prober
	mlbRange    string
	stopMetalLB func()
	mlbLog      func() string
}

type svcSpec struct {
	name string
	port int32
	ann  map[string]string
}

// setUpMigration brings up two real nodes under a tfccm that serves no
// load balancer (stopped once they are up), MetalLB's controller with an
// IPAddressPool inside the local cloud's VIP pool, and four class-less
// Services it gives addresses: one it picked, one chosen
// (metallb.universe.tf/loadBalancerIPs), two sharing one (allow-shared-ip,
// two ports). Its speakers are stood in for as MetalLB's BGP mode would
// have a router learn them: a /32 route per address to node-a in the
// cloud's router, and kube-proxy on the node serves it. Every Service
// answers and is probed when it returns.
func setUpMigration(t *testing.T) *migration {
	needNodes(t)
	ctx := context.Background()
	c := ForTest(t, Options{Nodes: 2})
	client := c.Client()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Nodes come up under a tfccm that serves no load balancer: the
	// nodes need their CCM; the Services are MetalLB's until the move.
	ccm := startTfccmWith(t, c, "")
	mlbLog, stopMetalLB := startMetalLB(t, c, "")
	base := netip.MustParsePrefix(c.Cloud.VIPPool).Addr().As4()
	at := func(last byte) string { a := base; a[3] = last; return netip.AddrFrom4(a).String() }
	// MetalLB's own pool from startMetalLB goes; the one migrated is in
	// the cloud's VIP pool, which the host reaches through the cloud.
	kubectl("", "-n", "metallb-system", "delete", "ipaddresspool", "test")
	mlbRange := at(200) + "-" + at(207)
	kubectl(fmt.Sprintf("apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: migrate\n  namespace: metallb-system\nspec:\n  addresses: [%q]\n", mlbRange), "apply", "-f", "-")
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitNodesReady(t, client)
	runPod(t, client, "web", "node-a")
	ccm.Stop()

	specs := []svcSpec{
		{"picked", 80, nil},
		{"chosen", 80, map[string]string{"metallb.universe.tf/loadBalancerIPs": at(205)}},
		{"shared-http", 80, map[string]string{"metallb.universe.tf/loadBalancerIPs": at(206), "metallb.universe.tf/allow-shared-ip": "front"}},
		{"shared-alt", 8080, map[string]string{"metallb.universe.tf/loadBalancerIPs": at(206), "metallb.universe.tf/allow-shared-ip": "front"}},
	}
	for _, s := range specs {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "default", Annotations: s.ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "netexec"},
				Ports: []corev1.ServicePort{{Name: "http", Port: s.port, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// MetalLB assigns; "its speakers" announce: a route per address.
	ips := map[string]string{}
	routed := map[string]bool{}
	nodeA := c.Cloud.Node("node-a").Address
	route := func(op, ip string) error {
		out, err := exec.Command("ip", "-n", c.Cloud.CloudNetns, "route", op, ip+"/32", "via", nodeA).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip route %s %s: %v: %s", op, ip, err, out)
		}
		return nil
	}
	for _, s := range specs {
		ip, err := harness.WaitForIngress(ctx, client, "default", s.name, 2*time.Minute)
		if err != nil {
			t.Fatalf("%v\nMetalLB log:\n%s", err, mlbLog())
		}
		ips[s.name] = ip
		if !routed[ip] {
			if err := route("replace", ip); err != nil {
				t.Fatal(err)
			}
			routed[ip] = true
			t.Cleanup(func() { _ = route("del", ip) })
		}
	}
	if ips["shared-http"] != at(206) || ips["shared-alt"] != at(206) || ips["chosen"] != at(205) {
		t.Fatalf("MetalLB's addresses %v: want chosen at %s, both shared ones at %s", ips, at(205), at(206))
	}
	probes := map[string]*prober{}
	for _, s := range specs {
		url := fmt.Sprintf("http://%s:%d/hostname", ips[s.name], s.port)
		p := &prober{url: url}
		if err := p.waitUp(2 * time.Minute); err != nil {
			t.Fatalf("%s before the migration (MetalLB's address, routed to node-a): %v", s.name, err)
		}
		probes[s.name] = p
		p.start()
		t.Cleanup(p.stop)
	}
	return &migration{c: c, client: client, kubectl: kubectl, specs: specs, ips: ips, routed: routed, route: route, probes: probes,
		mlbRange: mlbRange, stopMetalLB: stopMetalLB, mlbLog: mlbLog}
}

// notTheLoadBalancers: a Warning of no load balancer's (MetalLB's about
// its old annotation forms; the endpoints controller racing a Service's
// creation in the setup).
func notTheLoadBalancers(ev string) bool {
	return strings.HasPrefix(ev, "Warning deprecatedAnnotation:") || strings.HasPrefix(ev, "Warning FailedToCreateEndpoint:")
}

// prober GETs url every 100 ms (1 s timeout) and keeps the longest run
// without an answer; with ask set, it calls ask instead (true: answered).
type prober struct {
	url string
	ask func() bool

	mu             sync.Mutex
	last           time.Time // last answer
	gapA, gapB     time.Time // the longest gap: last answer before it, first after
	done           chan struct{}
	once, stopOnce sync.Once
}

func (p *prober) get() bool {
	if p.ask != nil {
		return p.ask()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := httpGet(ctx, p.url)
	return err == nil
}

func (p *prober) waitUp(timeout time.Duration) error {
	return harness.Eventually(context.Background(), timeout, "GET "+p.url, func(context.Context) error {
		if !p.get() {
			return fmt.Errorf("no answer")
		}
		p.mu.Lock()
		p.last = time.Now()
		p.mu.Unlock()
		return nil
	})
}

// waitUpAfter waits for an answer later than t.
func (p *prober) waitUpAfter(t time.Time, timeout time.Duration) error {
	return harness.Eventually(context.Background(), timeout, "GET "+p.url+" answered again", func(context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.gapB.After(t) {
			return fmt.Errorf("no answer since %s", t.Format(time.RFC3339Nano))
		}
		return nil
	})
}

// reset forgets the gaps so far: the longest is measured from now.
func (p *prober) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gapA, p.gapB = time.Time{}, time.Time{}
}

func (p *prober) start() {
	p.once.Do(func() {
		p.done = make(chan struct{})
		go func() {
			for {
				select {
				case <-p.done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if !p.get() {
					continue
				}
				now := time.Now()
				p.mu.Lock()
				if now.Sub(p.last) > p.gapB.Sub(p.gapA) {
					p.gapA, p.gapB = p.last, now
				}
				p.last = now
				p.mu.Unlock()
			}
		}()
	})
}

func (p *prober) stop() {
	p.stopOnce.Do(func() {
		if p.done != nil {
			close(p.done)
		}
	})
}

func (p *prober) longest() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gapB.Sub(p.gapA)
}

func (p *prober) gapFrom() time.Time { p.mu.Lock(); defer p.mu.Unlock(); return p.gapA }
func (p *prober) gapTo() time.Time   { p.mu.Lock(); defer p.mu.Unlock(); return p.gapB }
