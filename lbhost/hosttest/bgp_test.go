package hosttest_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/localcloud"
)

// bgpTrace, when set, is where BenchmarkBaremetalBGPFailover writes each
// run's timeline (hosttest.Trace).
var bgpTrace = flag.String("bgp.trace", "", "directory for BenchmarkBaremetalBGPFailover's per-run timelines and the router's trace")

// bgpRoutedPorts puts BenchmarkBaremetalBGPFailover's hosts on routed
// ports of the router (hosttest.BGPOptions.RoutedPorts).
var bgpRoutedPorts = flag.Bool("bgp.routed-ports", false, "BenchmarkBaremetalBGPFailover with every host on a routed port of the router's own (its link down is the port's: the router sees the carrier go), not on a network shared with the router")

// bgpBFDInterval is the BFD interval (detect multiplier 3) of the router
// and the hosts in the BGP tests and BenchmarkBaremetalBGPFailover.
var bgpBFDInterval = flag.Duration("bgp.bfd-interval", hosttest.DefaultBFDInterval, "BFD transmit and receive interval (detect multiplier 3) on the router and the hosts in the BGP tests and BenchmarkBaremetalBGPFailover; whole milliseconds, at least 10ms")

// bgpPassword is the sessions' password in TestBaremetalBGP: never in a
// plan, the state or a tfvars file.
const bgpPassword = "tfccm-bgp-s3cret"

// bgpSetup brings up a local cloud, two LB hosts with FRR and the
// announcer, the router and its clients, and on node-a and node-b
// kube-proxy's health endpoint and an HTTP server on 30080 answering with
// the address the request came from (the LB host's, on the node
// network); then applies the bgp module (the peering, with a password
// file and BFD) and waits until every session is up.
func bgpSetup(t testing.TB, bfd, routed bool) (*localcloud.Cloud, *hosttest.Hosts, *hosttest.ToR, func(args ...string) string) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	tor, err := hs.StartBGP(hosttest.BGPOptions{Router: filepath.Join(root, "bin", "lbhost-router"), Password: bgpPassword, BFDInterval: *bgpBFDInterval, RoutedPorts: routed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tor.Stop)
	serveSourceAddress(t, cloud)
	_, peering := bgpWorkspace(t, "bgp", fmt.Sprintf("cluster_name = \"c1\"\nsettings = %s\n", hclValue(t, tor.BGPSettings(bfd))))
	peering("init", "-input=false", "-no-color")
	peering("apply", "-auto-approve", "-input=false", "-no-color")
	t.Cleanup(func() { peering("destroy", "-auto-approve", "-input=false", "-no-color") })
	checkRouterNeighbors(t, hs, tor, peering("output", "-json", "router_neighbors"))
	// BGP only: BFD comes up a few seconds later (its slow start), and
	// the callers wait for it where it counts.
	if err := tor.WaitUp(context.Background(), false, 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, tor.Logs())
	}
	return cloud, hs, tor, peering
}

// serveSourceAddress serves kube-proxy's health endpoint and, on 30080, the
// address the request came from on node-a and node-b.
func serveSourceAddress(t testing.TB, cloud *localcloud.Cloud) {
	t.Helper()
	for _, n := range []string{"node-a", "node-b"} {
		stop, err := cloud.ServeHealthz(n, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		l, err := cloud.Listen(n, "tcp", ":30080")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			io.WriteString(w, host)
		})}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { srv.Close() })
	}
}

// checkRouterNeighbors checks the peering module's router_neighbors
// output: the router side derived from the same settings names, for each
// of the router's peers (two, or two per routed port), the hosts'
// addresses it peers with, the hosts' AS and the BFD profile's timers.
func checkRouterNeighbors(t testing.TB, hs *hosttest.Hosts, tor *hosttest.ToR, out string) {
	t.Helper()
	var got map[string]struct {
		Address    string   `json:"address"`
		RemoteASN  int      `json:"remote_asn"`
		Neighbors  []string `json:"neighbors"`
		BFDProfile *struct {
			ReceiveMS int `json:"receive_interval_ms"`
		} `json:"bfd_profile"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("router_neighbors %s: %v", out, err)
	}
	type peer struct {
		router    string
		neighbors []string
	}
	want := map[string]*peer{}
	for _, h := range hs.Hosts {
		for _, v6 := range []bool{false, true} {
			name, router, host := tor.RouterPeer(h, v6)
			if want[name] == nil {
				want[name] = &peer{router: router}
			}
			want[name].neighbors = append(want[name].neighbors, host)
		}
	}
	if len(got) != len(want) {
		t.Errorf("router_neighbors has %d peers, want %d (%v)", len(got), len(want), slices.Sorted(maps.Keys(want)))
	}
	for name, w := range want {
		g := got[name]
		slices.Sort(w.neighbors)
		if g.Address != w.router || g.RemoteASN != hosttest.HostASN || !slices.Equal(g.Neighbors, w.neighbors) || g.BFDProfile == nil || time.Duration(g.BFDProfile.ReceiveMS)*time.Millisecond != tor.BFDInterval() {
			t.Errorf("router_neighbors[%s] = %+v, want address %s, remote_asn %d, neighbors %v, the fast BFD profile", name, g, w.router, hosttest.HostASN, w.neighbors)
		}
	}
}

// bgpWorkspace copies a module of the baremetal set into a new directory
// with the given tfvars and returns a function running tofu in it.
func bgpWorkspace(t testing.TB, module, tfvars string) (string, func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	copyModule(t, filepath.Join(root, "templates", "baremetal", module), dir)
	if err := os.WriteFile(filepath.Join(dir, "tfccm.auto.tfvars"), []byte(tfvars), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, func(args ...string) string {
		t.Helper()
		out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		if args[0] == "apply" || args[0] == "plan" {
			state, _ := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
			if strings.Contains(string(out), bgpPassword) || strings.Contains(string(state), bgpPassword) {
				t.Fatal("the BGP password reached tofu's output or the state")
			}
		}
		return string(out)
	}
}

// bgpService applies the loadbalancer.bgp variant for a Service of the
// given IP families on the hosts and returns its VIPs (family → address),
// a function applying it again with changed settings, and one destroying
// it.
func bgpService(t testing.TB, cloud *localcloud.Cloud, hs *hosttest.Hosts, families ...string) (map[string]string, func(change func(settings map[string]any)), func()) {
	t.Helper()
	var nodes []string
	for _, n := range []string{"node-a", "node-b"} {
		nodes = append(nodes, fmt.Sprintf(`{ name = %q, addresses = [{ type = "InternalIP", address = %q }] }`, n, cloud.Node(n).Address))
	}
	policy := "SingleStack"
	if len(families) > 1 {
		policy = "RequireDualStack"
	}
	tfvars := func(change func(map[string]any)) string {
		settings := hs.LBSettings()
		settings["vip_pool"], settings["vip_pool6"] = hosttest.BGPPool, hosttest.BGPPool6
		if change != nil {
			change(settings)
		}
		return fmt.Sprintf(`cluster_name = "c1"
load_balancer_id = "web"
service = { ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], load_balancer_ip = null, shared_ip = null, source_ranges = [], ip_families = [%s], ip_family_policy = %q, session_affinity = "None", proxy_protocol = false }
nodes = [%s]
health_check = { protocol = "HTTP", port = 10256, path = "/healthz" }
settings = %s
`, `"`+strings.Join(families, `", "`)+`"`, policy, strings.Join(nodes, ", "), hclValue(t, settings))
	}
	dir, tofu := bgpWorkspace(t, "loadbalancer.bgp", tfvars(nil))
	tofu("init", "-input=false", "-no-color")
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	reapply := func(change func(map[string]any)) {
		if err := os.WriteFile(filepath.Join(dir, "tfccm.auto.tfvars"), []byte(tfvars(change)), 0o644); err != nil {
			t.Fatal(err)
		}
		tofu("apply", "-auto-approve", "-input=false", "-no-color")
	}
	destroyed := false
	destroy := func() {
		if !destroyed {
			destroyed = true
			tofu("destroy", "-auto-approve", "-input=false", "-no-color")
		}
	}
	t.Cleanup(destroy)
	vips := map[string]string{}
	for _, ip := range ingressIPs(t, tofu("output", "-json", "ingress")) {
		if strings.Contains(ip, ":") {
			vips["IPv6"] = ip
		} else {
			vips["IPv4"] = ip
		}
	}
	return vips, reapply, destroy
}

// waitNexthops waits until the router routes vip to exactly the hosts'
// addresses of vip's family among want, and returns how long it took.
func waitNexthops(t testing.TB, tor *hosttest.ToR, vip string, want []string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	slices.Sort(want)
	for {
		got := tor.Nexthops(vip)
		slices.Sort(got)
		if slices.Equal(got, want) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			sessions, _ := tor.Sessions()
			bfd, _ := tor.BFDPeers()
			route, _ := tor.Route(vip)
			t.Fatalf("the router routes %s via %v, want %v (after %s); its BGP sessions %v, BFD %v, BGP route:\n%s", vip, got, want, timeout, sessions, bfd, route)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// split sends n requests to url, each a new connection from the next
// client address, and counts them by the LB host that proxied them.
func split(t testing.TB, hs *hosttest.Hosts, tor *hosttest.ToR, url string, v6 bool, n int) map[string]int {
	t.Helper()
	byAddr := map[string]string{}
	for _, h := range hs.Hosts {
		byAddr[h.NodeNetAddress] = h.Name
	}
	got := map[string]int{}
	for i := 0; i < n; i++ {
		resp, err := tor.Client(i, v6, 2*time.Second).Get(url)
		if err != nil {
			t.Fatalf("request %d to %s: %v", i, url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[byAddr[string(b)]]++
	}
	return got
}

// TestBaremetalBGP serves a dual-stack Service of the loadbalancer.bgp
// variant from two LB hosts peering over BGP (password from a file, BFD)
// with a top-of-rack router namespace: the router installs both hosts as
// equal paths for each VIP and many clients' flows split over both; a
// host whose frontend stops (HAProxy stopped) withdraws its routes within
// a second; a host whose FRR is killed with SIGKILL drops out of the
// router's paths by BFD; a host retired (a planned removal) withdraws its
// routes before its frontend goes, without losing a request; destroying
// the Service withdraws every route.
func TestBaremetalBGP(t *testing.T) {
	cloud, hs, tor, peering := bgpSetup(t, true, false)
	vips, reapply, destroy := bgpService(t, cloud, hs, "IPv4", "IPv6")
	v4, v6 := vips["IPv4"], vips["IPv6"]
	if v4 == "" || v6 == "" {
		t.Fatalf("ingress %v: want an IPv4 and an IPv6 VIP", vips)
	}
	waitNexthops(t, tor, v4, tor.PeerAddresses(false), 10*time.Second)
	waitNexthops(t, tor, v6, tor.PeerAddresses(true), 10*time.Second)
	url4, url6 := "http://"+v4+"/", "http://["+v6+"]/"
	// The pool's communities reach the router (eBGP) on each path,
	// no-export included: set towards the peer, not when the route is
	// originated (there no-export would keep it from every eBGP peer).
	for _, prefix := range []string{v4 + "/32", v6 + "/128"} {
		out, err := tor.Route(prefix)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(out, "Community: 64513:100 no-export") != len(hs.Hosts) {
			t.Errorf("router's %s: want each of the %d paths with communities 64513:100 no-export:\n%s", prefix, len(hs.Hosts), out)
		}
	}

	for _, c := range []struct {
		url string
		v6  bool
	}{{url4, false}, {url6, true}} {
		got := split(t, hs, tor, c.url, c.v6, 100)
		t.Logf("%s: 100 clients' requests by LB host: %v", c.url, got)
		for _, h := range hs.Hosts {
			if got[h.Name] < 30 {
				t.Errorf("%s: %s served %d of 100 requests, want at least 30 (ECMP over both hosts)", c.url, h.Name, got[h.Name])
			}
		}
	}

	// lb-b's frontend stops: its announcer withdraws both VIPs.
	b := hs.Host("lb-b")
	start := time.Now()
	b.StopHAProxy()
	waitNexthops(t, tor, v4, tor.PeerAddresses(false, "lb-b"), 5*time.Second)
	withdrawn := time.Since(start)
	waitNexthops(t, tor, v6, tor.PeerAddresses(true, "lb-b"), 5*time.Second)
	t.Logf("frontend stopped on lb-b: route withdrawn in %s", withdrawn.Round(time.Millisecond))
	if withdrawn > time.Second {
		t.Errorf("lb-b's route was withdrawn %s after its frontend stopped, want at most 1 s", withdrawn)
	}
	if err := b.RestartHAProxy(); err != nil {
		t.Fatal(err)
	}
	waitNexthops(t, tor, v4, tor.PeerAddresses(false), 10*time.Second)

	// lb-a's FRR killed: BFD takes its paths away; lb-b serves. BFD is
	// up on every session by now (it was not needed before).
	if err := tor.WaitUp(context.Background(), true, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, tor.Logs())
	}
	a := hs.Host("lb-a")
	o := tor.MeasureDuring(url4, false, func() {
		a.KillFRR()
		waitNexthops(t, tor, v4, tor.PeerAddresses(false, "lb-a"), 10*time.Second)
	})
	t.Logf("lb-a's FRR killed (SIGKILL): %s", o)
	if o.Lost > 2 {
		t.Errorf("lb-a's FRR killed: %s, want at most 2 lost (BFD)", o)
	}

	if err := a.RestartFRR(); err != nil {
		t.Fatal(err)
	}
	waitNexthops(t, tor, v4, tor.PeerAddresses(false), 30*time.Second)

	// A planned removal of a host (retired): its routes go before its
	// frontend does, and the other host serves every request.
	o = tor.MeasureDuring(url4, false, func() {
		reapply(func(s map[string]any) { s["hosts"].(map[string]any)["lb-b"].(map[string]any)["retired"] = true })
	})
	t.Logf("lb-b retired: %s", o)
	if o.Lost > 0 {
		t.Errorf("retiring lb-b: %s, want none lost (its routes withdrawn before its frontend goes)", o)
	}
	waitNexthops(t, tor, v4, tor.PeerAddresses(false, "lb-b"), 5*time.Second)

	// Destroyed, the Service's VIPs are routed nowhere.
	destroy()
	waitNexthops(t, tor, v4, nil, 5*time.Second)
	waitNexthops(t, tor, v6, nil, 5*time.Second)

	// lb-a's IPv6 address gone (its addressing changed under an applied
	// peering): its IPv6 peer is off its networks now, which is a Warning,
	// not an error, so the peering still plans and (the cleanup) destroys.
	if out, err := exec.Command("ip", "-n", a.Netns, "addr", "del", a.Address6+"/64", "dev", "eth0").CombinedOutput(); err != nil {
		t.Fatalf("ip addr del: %v: %s", err, out)
	}
	out := strings.Join(strings.Fields(peering("plan", "-input=false", "-no-color")), " ")
	if !strings.Contains(out, "a peer is off the host's networks") || !strings.Contains(out, tor.Address6+" is outside every network") {
		t.Errorf("the peering's plan with lb-a's IPv6 address gone: want a Warning naming %s:\n%s", tor.Address6, out)
	}
}

// hclValue writes v as an HCL expression: JSON's syntax is HCL's for
// objects, tuples, strings and numbers (no value here holds "${").
func hclValue(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil || strings.Contains(string(b), "${") || strings.Contains(string(b), "%{") {
		t.Fatalf("settings as HCL: %v (%s)", err, b)
	}
	return string(b)
}

// ingressIPs are the addresses of a tofu output -json ingress.
func ingressIPs(t testing.TB, out string) []string {
	t.Helper()
	var ing []struct {
		IP string `json:"ip"`
	}
	if err := json.Unmarshal([]byte(out), &ing); err != nil || len(ing) == 0 {
		t.Fatalf("ingress %s: %v", out, err)
	}
	var ips []string
	for _, i := range ing {
		ips = append(ips, i.IP)
	}
	return ips
}

// BenchmarkBaremetalBGPFailover (make bench): with the bgp variant, two
// LB hosts and BFD at 100 ms × 3 (-bgp.bfd-interval sets the interval),
// lb-a is taken away at least 3 times each way, its link down (with
// -bgp.routed-ports its routed port's: the router sees the carrier go)
// and its FRR killed (SIGKILL), while clients send 20 requests per second (a
// new connection each, from 32 client addresses); it reports the outage
// (first to last lost request), the requests lost and how long the router
// kept a path to lb-a, median and max. A control ("none": nothing taken away, measured the same way)
// shows what a loaded machine loses on its own. Goal: median outage <=
// 1 s, <= 1 request lost.
func BenchmarkBaremetalBGPFailover(b *testing.B) {
	cloud, hs, tor, _ := bgpSetup(b, true, *bgpRoutedPorts)
	vips, _, _ := bgpService(b, cloud, hs, "IPv4")
	vip := vips["IPv4"]
	url := "http://" + vip + "/"
	waitNexthops(b, tor, vip, tor.PeerAddresses(false), 10*time.Second)
	if err := tor.WaitUp(context.Background(), true, 30*time.Second); err != nil {
		b.Fatalf("%v\n%s", err, tor.Logs())
	}
	waitServing(b, hs, tor, url)
	a := hs.Host("lb-a")
	var trace *hosttest.Trace
	if *bgpTrace != "" {
		var err error
		if trace, err = tor.StartTrace(*bgpTrace); err != nil {
			b.Fatal(err)
		}
		defer trace.Stop()
	}
	nothing := func() error { return nil }
	for _, way := range []struct {
		name          string
		take, return_ func() error
		// bfdUp: wait for BFD, not only BGP, before the next run.
		bfdUp bool
	}{
		{"none", nothing, nothing, true},
		// Link down before the kills: after a restart of its FRR the
		// router's BFD session with lb-a may stay down (FRR 8.4.4), and
		// only the hold timer would notice a link going down then.
		{"link-down", func() error { return a.SetLink(false) }, func() error { return a.SetLink(true) }, true},
		// On a routed port (-bgp.routed-ports) its link is the port.
		{"port-down", func() error { return tor.SetPort(a, false) }, func() error { return tor.SetPort(a, true) }, true},
		{"frr-killed", func() error { a.KillFRR(); return nil }, a.RestartFRR, false},
	} {
		if (way.name == "link-down" && *bgpRoutedPorts) || (way.name == "port-down" && !*bgpRoutedPorts) {
			continue
		}
		var spans, gone []time.Duration
		var lost []int
		for i := 0; i < max(b.N, 3); i++ {
			var g time.Duration
			var marks []hosttest.Mark
			before := ""
			if trace != nil {
				before = trace.Snapshot(vip)
			}
			w := tor.MeasureTimeline(url, false, func() {
				marks = append(marks, hosttest.Mark{At: time.Now(), What: "lb-a " + way.name})
				if err := way.take(); err != nil {
					b.Fatal(err)
				}
				marks = append(marks, hosttest.Mark{At: time.Now(), What: "lb-a " + way.name + " done"})
				if way.name != "none" {
					g = waitNexthops(b, tor, vip, tor.PeerAddresses(false, "lb-a"), 10*time.Second)
					marks = append(marks, hosttest.Mark{At: time.Now(), What: "the router's path to lb-a gone (ip route show)"})
				}
			})
			o := w.Outage
			// On stdout: a benchmark's log is cut after a few lines.
			fmt.Fprintf(os.Stdout, "BGP FAILOVER RUN %s %d: %s, the router's path to lb-a gone after %s\n", way.name, i+1, o, g.Round(time.Millisecond))
			if trace != nil {
				name := fmt.Sprintf("%s-%d", way.name, i+1)
				if err := trace.WriteTimeline(name, w, marks, before, trace.Snapshot(vip)); err != nil {
					b.Fatal(err)
				}
				fmt.Fprintf(os.Stdout, "BGP FAILOVER RUN %s %d: lost by the host their SYN went to %v (timeline %s.txt)\n", way.name, i+1, trace.LostByHost(w), name)
			}
			spans, lost, gone = append(spans, o.Span), append(lost, o.Lost), append(gone, g)
			if err := way.return_(); err != nil {
				b.Fatal(err)
			}
			waitNexthops(b, tor, vip, tor.PeerAddresses(false), 30*time.Second)
			if err := tor.WaitUp(context.Background(), way.bfdUp, 30*time.Second); err != nil {
				b.Fatal(err)
			}
			waitServing(b, hs, tor, url)
		}
		slices.Sort(spans)
		slices.Sort(lost)
		slices.Sort(gone)
		b.ReportMetric(spans[len(spans)/2].Seconds(), way.name+"-outage-median-s")
		b.ReportMetric(spans[len(spans)-1].Seconds(), way.name+"-outage-max-s")
		b.ReportMetric(float64(lost[len(lost)/2]), way.name+"-lost-median")
		b.ReportMetric(gone[len(gone)/2].Seconds(), way.name+"-path-gone-median-s")
		fmt.Fprintf(os.Stdout, "BGP FAILOVER (lb-a %s, BFD %s x%d) outage median %s max %s, requests lost median %d max %d at 20 req/s, router's path gone median %s max %s\n",
			way.name, tor.BFDInterval(), hosttest.BFDMultiplier, spans[len(spans)/2].Round(time.Millisecond), spans[len(spans)-1].Round(time.Millisecond), lost[len(lost)/2], lost[len(lost)-1],
			gone[len(gone)/2].Round(time.Millisecond), gone[len(gone)-1].Round(time.Millisecond))
	}
}

// waitServing waits until every host answers clients through the router:
// 16 requests in a row, each a new connection from the next client
// address, all answered and by every host. A host the router routes to
// may still not answer (a route back to the clients lost with its link),
// and a run starting then measures that, not the failover.
func waitServing(t testing.TB, hs *hosttest.Hosts, tor *hosttest.ToR, url string) {
	t.Helper()
	byAddr := map[string]string{}
	for _, h := range hs.Hosts {
		byAddr[h.NodeNetAddress] = h.Name
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, failed := map[string]int{}, 0
		for i := 0; i < 16; i++ {
			resp, err := tor.Client(i, false, time.Second).Get(url)
			if err != nil {
				failed++
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got[byAddr[string(body)]]++
		}
		served := failed == 0
		for _, h := range hs.Hosts {
			served = served && got[h.Name] > 0
		}
		if served {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every host answers through the router: 16 requests served by %v, %d failed", got, failed)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
