package clouds

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/localcloud"
	"github.com/tfccm/tfccm/test/standin"
)

// benchLocal is the local set for BenchmarkPlan500Nodes: the reference the
// real-cloud sets are compared with (its lbhost provider plans without
// touching the host).
func benchLocal() cloud {
	return cloud{
		set: "local",
		config: `
load_balancer {
  settings = { state_dir = "/var/lib/tfccm-bench/state", cloud_netns = "tfccmbench-cloud", vip_pool = "10.252.0.0/24" }
}
`,
		nodes: func() []*corev1.Node {
			return []*corev1.Node{node("node-a", "terraform://local/node-a", "10.250.0.11", "")}
		},
	}
}

var lastDigits = regexp.MustCompile(`[0-9]+$|[0-9]+([^0-9]*)$`)

// benchNodes makes n nodes shaped like the cloud's first node: each with
// its own name, providerID (the name, or the last number in it, counted
// up) and addresses.
func benchNodes(tmpl *corev1.Node, n int) []*corev1.Node {
	var out []*corev1.Node
	for i := 0; i < n; i++ {
		nd := tmpl.DeepCopy()
		nd.Name = fmt.Sprintf("node-%03d", i)
		nd.Labels["kubernetes.io/hostname"] = nd.Name
		pid := tmpl.Spec.ProviderID
		if strings.Contains(pid, tmpl.Name) {
			pid = strings.ReplaceAll(pid, tmpl.Name, nd.Name)
		} else if loc := lastDigits.FindStringSubmatchIndex(pid); loc != nil {
			end := loc[1]
			if loc[2] >= 0 {
				end = loc[2]
			}
			num, _ := strconv.Atoi(pid[loc[0]:end])
			pid = fmt.Sprintf("%s%0*d%s", pid[:loc[0]], end-loc[0], num+i, pid[end:])
		}
		nd.Spec.ProviderID = pid
		for j, a := range nd.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			b := ip.As16()
			b[14], b[15] = byte(i/250), byte(i%250+1)
			if ip.Is4() {
				b4 := ip.As4()
				b4[2], b4[3] = b[14], b[15]
				nd.Status.Addresses[j].Address = netip.AddrFrom4(b4).String()
			} else {
				nd.Status.Addresses[j].Address = netip.AddrFrom16(b).String()
			}
		}
		out = append(out, nd)
	}
	return out
}

// BenchmarkPlan500Nodes: the time to render and plan one load balancer
// over 500 nodes, per set, through the stand-in of the set's provider
// (local: tfccm's lbhost provider), reported as a ratio to the local set
// ("x-local"). Each iteration also renders and plans the local set (timer
// stopped), so the ratio compares runs made under the same machine load.
// `make bench` runs it; READMEs explain sets above 2x.
func BenchmarkPlan500Nodes(b *testing.B) {
	local := benchPlanner(b, benchLocal())
	for _, c := range []cloud{hcloudCloud(), digitalOceanCloud(), ociCloud(), openStackCloud(), googleCloud(), exoscaleCloud()} {
		b.Run(c.set, func(b *testing.B) {
			plan := benchPlanner(b, c)
			var set, ref time.Duration
			for b.Loop() {
				start := time.Now()
				plan(b)
				set += time.Since(start)
				b.StopTimer()
				start = time.Now()
				local(b)
				ref += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(set)/float64(ref), "x-local")
		})
	}
}

// benchPlanner initializes a workspace of one Service over 500 nodes for
// cloud c and returns a function that renders it again and plans it.
func benchPlanner(b *testing.B, c cloud) func(*testing.B) {
	b.Helper()
	run := func(ctx context.Context, dir string, args ...string) error {
		_, err := localcloud.RunTofu(ctx, repo.Tofu(b), dir, args...)
		return err
	}
	if c.provider != "" {
		env := standin.Setup(b, c.provider)
		env.Only = c.only
		if c.fixture != nil {
			env.SetFixture(b, c.fixture)
		}
		run = func(ctx context.Context, dir string, args ...string) error {
			_, err := env.Run(ctx, dir, args...)
			return err
		}
	}
	set, err := templates.LoadBuiltin(c.set)
	if err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	cfg := parseConfig(b, c.config, work)
	nodes := benchNodes(c.nodes()[0], 500)
	svc := service(nil)
	dir := filepath.Join(work, "ws")
	render := func(b *testing.B) {
		ws, err := set.RenderLoadBalancer(cfg, svc, nodes, templates.Addresses{})
		if err != nil {
			b.Fatal(err)
		}
		if err := ws.WriteDir(dir); err != nil {
			b.Fatal(err)
		}
	}
	tofu := func(b *testing.B, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		if err := run(ctx, dir, args...); err != nil {
			b.Fatal(err)
		}
	}
	render(b)
	tofu(b, "init", "-input=false", "-no-color")
	return func(b *testing.B) {
		render(b)
		tofu(b, "plan", "-input=false", "-no-color", "-lock=false")
	}
}
