package ccm

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/cloud-provider/controllers/route"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/controller-manager/pkg/features/register" // the route controller reads its feature gates
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
)

// BenchmarkRoutesInitialSync1000Nodes runs the real route controller
// (k8s.io/cloud-provider/controllers/route, fake clientset and informers)
// against the Routes facet, the real workspace engine and real OpenTofu
// with a trivial terraform_data routes template (testdata/routes-bench).
// 1,000 nodes with pod CIDRs sync from empty; it reports how many tofu
// runs the initial sync took (applies/initial-sync, goal <= 3) and how
// many each reconcile period of a steady cluster takes afterwards
// (applies/period, goal 0).
//
// "ahead" is the CCM's setup (the facet reads Nodes from the shared
// informers and adds routes of nodes with pod CIDRs ahead of their calls);
// "calls-only" batches only the calls, which the route controller issues at
// most 200 at a time, for comparison.
//
//	go test -run '^$' -bench Routes ./ccm/
func BenchmarkRoutesInitialSync1000Nodes(b *testing.B) {
	const nodes, period, idlePeriods = 1000, time.Second, 3
	tofu, err := filepath.Abs("../bin/tofu")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(tofu); err != nil {
		b.Skipf("OpenTofu not found at %s: run `make tools`", tofu)
	}
	// The route controller logs a line per node and route; keep the
	// benchmark output readable.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	defer klog.LogToStderr(true)
	for _, ahead := range []bool{true, false} {
		name := map[bool]string{true: "ahead", false: "calls-only"}[ahead]
		b.Run(name, func(b *testing.B) {
			var initial, steady, syncTime float64
			for b.Loop() {
				i, s, d := routesSyncRun(b, tofu, nodes, period, idlePeriods, ahead)
				initial += float64(i)
				steady += float64(s) / idlePeriods
				syncTime += d.Seconds()
			}
			n := float64(b.N)
			b.ReportMetric(initial/n, "applies/initial-sync")
			b.ReportMetric(steady/n, "applies/period")
			b.ReportMetric(syncTime/n, "s/initial-sync")
		})
	}
}

func routesSyncRun(b *testing.B, tofu string, nodes int, period time.Duration, idlePeriods int, ahead bool) (initial, steady int64, took time.Duration) {
	b.Helper()
	dir := b.TempDir()
	override, err := filepath.Abs("testdata/routes-bench")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
cluster_name = "bench"
work_dir     = %q
override_dir = %q
terraform {
  binary = %q
}
routes {
  batch_window = "2s"
}
`, filepath.Join(dir, "work"), override, tofu), "bench.hcl")
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if c.routes == nil {
		b.Fatal("routes facet not enabled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		<-c.engine.Done()
	}()
	c.engine.Start(ctx)
	c.routes.start(ctx)

	objs := make([]*corev1.Node, nodes)
	client := fake.NewClientset()
	for i := range nodes {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), UID: types.UID(fmt.Sprintf("uid-%04d", i))},
			Spec:       corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.250.%d.%d", i/250, i%250+1)},
			}},
		}
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
		objs[i] = n
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	if ahead {
		c.SetInformers(factory)
	}
	_, clusterCIDR, _ := net.ParseCIDR("10.64.0.0/12")
	rc, err := route.New(c.routes, client, factory.Core().V1().Nodes(), "bench", []*net.IPNet{clusterCIDR})
	if err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	start := time.Now()
	go rc.Run(ctx, period, controllersmetrics.NewControllerManagerMetrics("bench"))
	deadline := time.Now().Add(10 * time.Minute)
	for {
		list, err := c.routes.ListRoutes(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if len(list) == nodes && allRoutesCreated(ctx, b, client, nodes) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("initial sync incomplete after 10m: %d routes", len(list))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took = time.Since(start)
	initial = c.routes.runs.Load()
	time.Sleep(time.Duration(idlePeriods) * period)
	steady = c.routes.runs.Load() - initial
	return initial, steady, took
}

// allRoutesCreated: the route controller has marked every node's network
// available, i.e. its reconcile saw every CreateRoute succeed.
func allRoutesCreated(ctx context.Context, b *testing.B, client *fake.Clientset, nodes int) bool {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ok := 0
	for _, n := range list.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse {
				ok++
			}
		}
	}
	return ok == nodes
}
