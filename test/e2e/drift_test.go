package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestDriftRepair: with terraform.drift_interval set, what is removed
// behind tfccm's back on the local cloud (a Service's HAProxy fragment, its
// VIP, a route) is seen by the next drift check — the lbhost provider reads
// the host back — and re-applied, with a TerraformDriftRepaired Event on
// the Service.
func TestDriftRepair(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, _ := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("load_balancer {\n  settings = %s\n}\nroutes {\n  batch_window = \"1s\"\n  settings     = %s\n}\n",
		harness.HCLObject(cloud.LBSettings()), harness.HCLObject(cloud.RoutesSettings())), `drift_interval = "3s"`)
	serveNodes(t, cloud, 30080)
	createRoutedNode(t, client, cloud, "node-a", []string{"10.244.1.0/24"})
	startCCM(t, cluster, cfg, routeFlags...)

	svc := createHTTPService(t, client, "drift", 80)
	vip := waitVIP(t, client, "drift")
	backendsAre(t, vip, 80, "node-a")
	repaired := func() int {
		n, err := harness.EventCount(ctx, client, svc.Namespace, svc.Name, lbcontroller.ReasonDriftRepaired)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("fragment removed and HAProxy reloaded", func(t *testing.T) {
		frags, _ := filepath.Glob(filepath.Join(cloud.StateDir, "fragments", "*.cfg"))
		if len(frags) != 1 {
			t.Fatalf("fragments: %v", frags)
		}
		before := repaired()
		if err := os.Remove(frags[0]); err != nil {
			t.Fatal(err)
		}
		reloadHAProxy(t, cloud)
		start := time.Now()
		eventually(t, time.Minute, "drift repaired", func(context.Context) error {
			if repaired() <= before {
				return fmt.Errorf("no TerraformDriftRepaired yet: %s", harness.Events(ctx, client, svc.Namespace, svc.Name))
			}
			if _, err := os.Stat(frags[0]); err != nil {
				return err
			}
			return nil
		})
		t.Logf("fragment repaired %s after its removal", time.Since(start).Round(time.Millisecond))
		backendsAre(t, vip, 80, "node-a")
	})

	t.Run("VIP removed from the cloud namespace", func(t *testing.T) {
		before := repaired()
		if out, err := exec.Command("ip", "-n", cloud.CloudNetns, "addr", "del", vip+"/32", "dev", "lo").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		eventually(t, time.Minute, "VIP repaired", func(context.Context) error {
			if repaired() <= before {
				return fmt.Errorf("no new TerraformDriftRepaired yet")
			}
			return nil
		})
		backendsAre(t, vip, 80, "node-a")
		if got := waitVIP(t, client, "drift"); got != vip {
			t.Errorf("VIP changed from %s to %s", vip, got)
		}
	})

	t.Run("route removed", func(t *testing.T) {
		want := []string{"10.244.1.0/24 via " + cloud.Node("node-a").Address + " "}
		eventually(t, time.Minute, "route present", func(context.Context) error { return routesPresent(cloud, want, nil) })
		if out, err := exec.Command("ip", "-n", cloud.CloudNetns, "route", "del", "10.244.1.0/24").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		eventually(t, time.Minute, "route repaired", func(context.Context) error { return routesPresent(cloud, want, nil) })
	})
}

// reloadHAProxy asks the local cloud's HAProxy master to reload.
func reloadHAProxy(t *testing.T, cloud *localcloud.Cloud) {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(cloud.StateDir, "master.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "reload\n"); err != nil {
		t.Fatal(err)
	}
	conn.(*net.UnixConn).CloseWrite()
	_, _ = io.ReadAll(conn)
}
