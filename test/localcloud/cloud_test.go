package localcloud

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCloudShape(t *testing.T) {
	c := shared
	for _, tc := range []struct {
		node, addr, addr6, zone string
	}{
		{"node-a", "10.250.0.11", "fd00:250::11", "local-a"},
		{"node-b", "10.250.0.12", "", "local-a"},
		{"node-c", "10.250.0.13", "fd00:250::13", "local-b"},
	} {
		n := c.Node(tc.node)
		if n.Kind != "instance" || n.Name != tc.node || n.Address != tc.addr || n.AddressV6 != tc.addr6 ||
			n.Zone != tc.zone || n.Region != "local" || !n.Running || n.Netns != c.Prefix+"-n-"+tc.node {
			t.Errorf("node %s = %+v", tc.node, n)
		}
		if _, err := os.Stat(filepath.Join("/run/netns", n.Netns)); err != nil {
			t.Errorf("node %s netns: %v", tc.node, err)
		}
	}
	if c.CloudNetns != c.Prefix+"-cloud" || c.MasterSocket != filepath.Join(c.StateDir, "master.sock") {
		t.Errorf("cloud outputs: netns %q master socket %q", c.CloudNetns, c.MasterSocket)
	}
	for _, p := range []string{c.MasterSocket, c.StatsSocket, filepath.Join(c.StateDir, "base.cfg")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("state dir: %v", err)
		}
	}
	out, err := exec.Command("ip", "route", "show", "exact", c.VIPPool).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "via "+c.CloudAddress) {
		t.Errorf("host route to the VIP pool: %v %s", err, out)
	}
	// The master CLI answers (HAProxy runs in master-worker mode).
	if out, err := haproxyCommand(c.MasterSocket, "show proc"); err != nil || !strings.Contains(out, "worker") {
		t.Errorf("master socket show proc: %v %q", err, out)
	}
}

func TestNodesReachableFromCloud(t *testing.T) {
	c := shared
	for _, node := range []string{"node-a", "node-b"} {
		stop, err := c.ServeHTTP(node, 18080, "hello from "+node)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	client := HTTPClient(c.CloudNetns, 3*time.Second)
	for _, tc := range []struct{ url, want string }{
		{"http://10.250.0.11:18080/", "hello from node-a"},
		{"http://[fd00:250::11]:18080/", "hello from node-a"},
		{"http://10.250.0.12:18080/", "hello from node-b"},
	} {
		resp, err := client.Get(tc.url)
		if err != nil {
			t.Errorf("GET %s: %v", tc.url, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tc.want {
			t.Errorf("GET %s = %q, want %q", tc.url, b, tc.want)
		}
	}
	// node-b has no IPv6 address.
	if _, err := client.Get("http://[fd00:250::12]:18080/"); err == nil {
		t.Error("node-b answered on an IPv6 address it should not have")
	}
}

func TestAddRemoveNode(t *testing.T) {
	c := shared
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.AddNode(ctx, NodeSpec{Name: "node-d", Zone: "local-c", InstanceType: "local.tiny"}); err != nil {
		t.Fatal(err)
	}
	d := c.Node("node-d")
	if d.Address != "10.250.0.14" || d.Zone != "local-c" || d.InstanceType != "local.tiny" || d.AddressV6 != "" {
		t.Fatalf("node-d = %+v", d)
	}
	stop, err := c.ServeHTTP("node-d", 18081, "d")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := HTTPClient(c.CloudNetns, 3*time.Second).Get("http://10.250.0.14:18081/")
	if err != nil {
		t.Fatalf("new node unreachable: %v", err)
	}
	resp.Body.Close()
	stop()
	if err := c.RemoveNode(ctx, "node-d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", d.Netns)); !os.IsNotExist(err) {
		t.Errorf("node-d netns still exists: %v", err)
	}
	if n := c.Node("node-d"); n.Name != "" {
		t.Errorf("node-d still reported: %+v", n)
	}
	if err := c.RemoveNode(ctx, "node-d"); err == nil {
		t.Error("removing an unknown node succeeded")
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"prefix too long", Options{Prefix: "abcdefghijk"}, "prefix"},
		{"prefix with dash", Options{Prefix: "a-b"}, "prefix"},
		{"bad node name", Options{Prefix: "ok", Nodes: []NodeSpec{{Name: "Node_A"}}}, "node name"},
		{"duplicate node", Options{Prefix: "ok", Nodes: []NodeSpec{{Name: "a"}, {Name: "a"}}}, "already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.WorkDir = t.TempDir()
			_, err := Up(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Up = %v, want error containing %q", err, tc.want)
			}
		})
	}
	// The shared cloud's prefix is taken.
	if _, err := Up(context.Background(), Options{Prefix: shared.Prefix, WorkDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "already up") {
		t.Fatalf("Up with a prefix in use = %v", err)
	}
}

// A second cloud next to the shared one gets its own transit link and VIP
// pool, and its nodes are separate.
func TestForTestSecondCloud(t *testing.T) {
	c2 := ForTest(t, Options{Nodes: []NodeSpec{{Name: "solo"}}})
	if c2.VIPPool == shared.VIPPool || c2.TransitCIDR == shared.TransitCIDR || c2.HostAddress == shared.HostAddress {
		t.Fatalf("second cloud reuses addresses: pool %s transit %s", c2.VIPPool, c2.TransitCIDR)
	}
	if got := c2.Nodes(); len(got) != 1 || got[0] != "solo" {
		t.Fatalf("nodes = %v", got)
	}
	stop, err := c2.ServeHTTP("solo", 18082, "solo")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := HTTPClient(c2.CloudNetns, 3*time.Second).Get("http://10.250.0.11:18082/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "solo" {
		t.Fatalf("second cloud's node 10.250.0.11 answered %q", b)
	}
}
