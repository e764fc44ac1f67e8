package ccm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances"
	"github.com/tfccm/tfccm/internal/repo"
)

// testInfra is a real OpenTofu working directory whose state has the
// local cloud's node shape (instances/testdata/infra).
type testInfra struct {
	t   *testing.T
	dir string
	tf  *tfexec.Terraform
}

func newTestInfra(t *testing.T) *testInfra {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("../instances/testdata/infra/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	tf, err := tfexec.NewTerraform(dir, repo.Tofu(t))
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := instances.Env(&config.Terraform{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	if err := tf.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &testInfra{t: t, dir: dir, tf: tf}
}

// apply sets the nodes: name -> running.
func (in *testInfra) apply(nodes map[string]bool) {
	in.t.Helper()
	vars := map[string]any{}
	i := 2
	for name, running := range nodes {
		vars[name] = map[string]any{"address": fmt.Sprintf("10.250.0.%d", i), "zone": "zone-" + name, "region": "region-1", "instance_type": "type-" + name, "running": running}
		i++
	}
	b, _ := json.Marshal(map[string]any{"nodes": vars})
	if err := os.WriteFile(filepath.Join(in.dir, "nodes.auto.tfvars.json"), b, 0o644); err != nil {
		in.t.Fatal(err)
	}
	if err := in.tf.Apply(context.Background()); err != nil {
		in.t.Fatal(err)
	}
}

// newTestCloud builds a Cloud from a real cloud config whose instances
// come from the infra's state file, mapped by the built-in local set.
func newTestCloud(t *testing.T, inf *testInfra, instancesBlock string) *Cloud {
	t.Helper()
	dir := t.TempDir()
	src := fmt.Sprintf(`
cluster_name = "test"
work_dir     = %q
terraform { binary = %q }
load_balancer { enabled = false }
instances {
%s
}
`, dir, repo.Tofu(t), instancesBlock)
	if inf != nil {
		src = strings.Replace(src, "STATEFILE", filepath.Join(inf.dir, "terraform.tfstate"), 1)
	}
	cfg, err := config.Parse([]byte(src), filepath.Join(dir, "cloud.conf"))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if c.instances != nil {
		t.Cleanup(c.instances.store.Close)
	}
	return c
}

func testNode(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestInstancesFacet(t *testing.T) {
	inf := newTestInfra(t)
	inf.apply(map[string]bool{"a": true, "b": false})
	c := newTestCloud(t, inf, `
  refresh_rate  = 1000
  refresh_burst = 100
  source "infra" { state_file = "STATEFILE" }`)
	ctx := context.Background()

	v2, ok := c.InstancesV2()
	if !ok {
		t.Fatal("InstancesV2 not enabled")
	}
	md, err := v2.InstanceMetadata(ctx, testNode("a", ""))
	if err != nil {
		t.Fatal(err)
	}
	want := &cloudprovider.InstanceMetadata{
		ProviderID: "terraform://local/a", InstanceType: "type-a", Zone: "zone-a", Region: "region-1",
		NodeAddresses:    []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: md.NodeAddresses[0].Address}, {Type: v1.NodeHostName, Address: "a"}},
		AdditionalLabels: map[string]string{"tfccm.io/netns": "tfccm-n-a"},
	}
	if !reflect.DeepEqual(md, want) || !strings.HasPrefix(md.NodeAddresses[0].Address, "10.250.0.") {
		t.Fatalf("InstanceMetadata:\n got  %+v\n want %+v", md, want)
	}
	for _, tt := range []struct {
		node             *v1.Node
		exists, shutdown bool
	}{
		{testNode("a", ""), true, false},
		{testNode("whatever", "terraform://local/a"), true, false},
		{testNode("b", "terraform://local/b"), true, true},
		{testNode("gone", ""), false, false},
		{testNode("a", "terraform://local/replaced"), false, false},
	} {
		exists, err := v2.InstanceExists(ctx, tt.node)
		if err != nil || exists != tt.exists {
			t.Errorf("InstanceExists(%s, %q) = %v, %v; want %v", tt.node.Name, tt.node.Spec.ProviderID, exists, err, tt.exists)
		}
		if !tt.exists {
			if _, err := v2.InstanceMetadata(ctx, tt.node); err != cloudprovider.InstanceNotFound {
				t.Errorf("InstanceMetadata(%s) err = %v, want InstanceNotFound", tt.node.Name, err)
			}
			continue
		}
		shutdown, err := v2.InstanceShutdown(ctx, tt.node)
		if err != nil || shutdown != tt.shutdown {
			t.Errorf("InstanceShutdown(%s) = %v, %v; want %v", tt.node.Name, shutdown, err, tt.shutdown)
		}
	}

	v1i, ok := c.Instances()
	if !ok {
		t.Fatal("Instances not enabled")
	}
	if addrs, err := v1i.NodeAddresses(ctx, "b"); err != nil || len(addrs) != 2 || addrs[1].Address != "b" {
		t.Errorf("NodeAddresses(b) = %v, %v", addrs, err)
	}
	if addrs, err := v1i.NodeAddressesByProviderID(ctx, "terraform://local/a"); err != nil || len(addrs) != 2 {
		t.Errorf("NodeAddressesByProviderID = %v, %v", addrs, err)
	}
	id, err := v1i.InstanceID(ctx, "a")
	if err != nil || id != "local/a" {
		t.Errorf("InstanceID = %q, %v", id, err)
	}
	// The k8s helper rebuilds the providerID from InstanceID.
	if pid, err := cloudprovider.GetInstanceProviderID(ctx, c, "a"); err != nil || pid != "terraform://local/a" {
		t.Errorf("GetInstanceProviderID = %q, %v", pid, err)
	}
	if _, err := v1i.InstanceID(ctx, "gone"); err != cloudprovider.InstanceNotFound {
		t.Errorf("InstanceID(gone) err = %v", err)
	}
	if typ, err := v1i.InstanceType(ctx, "b"); err != nil || typ != "type-b" {
		t.Errorf("InstanceType = %q, %v", typ, err)
	}
	if typ, err := v1i.InstanceTypeByProviderID(ctx, "terraform://local/a"); err != nil || typ != "type-a" {
		t.Errorf("InstanceTypeByProviderID = %q, %v", typ, err)
	}
	if err := v1i.AddSSHKeyToAllInstances(ctx, "u", nil); err != cloudprovider.NotImplemented {
		t.Errorf("AddSSHKeyToAllInstances = %v", err)
	}
	if n, err := v1i.CurrentNodeName(ctx, "host1"); err != nil || n != types.NodeName("host1") {
		t.Errorf("CurrentNodeName = %q, %v", n, err)
	}
	if ok, err := v1i.InstanceExistsByProviderID(ctx, "terraform://local/b"); err != nil || !ok {
		t.Errorf("InstanceExistsByProviderID(b) = %v, %v", ok, err)
	}
	if ok, err := v1i.InstanceExistsByProviderID(ctx, "terraform://local/zz"); err != nil || ok {
		t.Errorf("InstanceExistsByProviderID(zz) = %v, %v", ok, err)
	}
	if sd, err := v1i.InstanceShutdownByProviderID(ctx, "terraform://local/b"); err != nil || !sd {
		t.Errorf("InstanceShutdownByProviderID(b) = %v, %v", sd, err)
	}

	z, ok := c.Zones()
	if !ok {
		t.Fatal("Zones not enabled")
	}
	if _, err := z.GetZone(ctx); err != cloudprovider.NotImplemented {
		t.Errorf("GetZone = %v", err)
	}
	if zone, err := z.GetZoneByProviderID(ctx, "terraform://local/a"); err != nil || zone != (cloudprovider.Zone{FailureDomain: "zone-a", Region: "region-1"}) {
		t.Errorf("GetZoneByProviderID = %+v, %v", zone, err)
	}
	if zone, err := z.GetZoneByNodeName(ctx, "b"); err != nil || zone.FailureDomain != "zone-b" {
		t.Errorf("GetZoneByNodeName = %+v, %v", zone, err)
	}

	// An instance added to the infra is found at once (a miss refreshes);
	// one removed is gone once the state is re-read (here: at once; in
	// the controller: within the TTL).
	inf.apply(map[string]bool{"b": true, "c": true})
	if md, err := v2.InstanceMetadata(ctx, testNode("c", "")); err != nil || md.ProviderID != "terraform://local/c" {
		t.Errorf("added instance: %+v, %v", md, err)
	}
	if exists, err := v2.InstanceExists(ctx, testNode("a", "terraform://local/a")); err != nil || exists {
		t.Errorf("removed instance: InstanceExists = %v, %v; want false, nil", exists, err)
	}

	// The state source disappears: nothing is ever reported gone.
	if err := os.Rename(filepath.Join(inf.dir, "terraform.tfstate"), filepath.Join(inf.dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if exists, err := v2.InstanceExists(ctx, testNode("zz", "")); err == nil || exists {
		t.Errorf("source unavailable: InstanceExists = %v, %v; want an error", exists, err)
	}
	if ok, err := v1i.InstanceExistsByProviderID(ctx, "terraform://local/zz"); err == nil || ok {
		t.Errorf("source unavailable: InstanceExistsByProviderID = %v, %v; want an error", ok, err)
	}
	if _, err := v1i.InstanceID(ctx, "zz"); err == nil || err == cloudprovider.InstanceNotFound {
		t.Errorf("source unavailable: InstanceID err = %v; want a real error", err)
	}
}

func TestInstancesDisabled(t *testing.T) {
	for name, block := range map[string]string{
		"no sources": ``,
		"disabled":   "enabled = false\nsource \"x\" { state_file = \"/nonexistent\" }",
	} {
		t.Run(name, func(t *testing.T) {
			c := newTestCloud(t, nil, block)
			if _, ok := c.InstancesV2(); ok {
				t.Error("InstancesV2 enabled")
			}
			if _, ok := c.Instances(); ok {
				t.Error("Instances enabled")
			}
			if _, ok := c.Zones(); ok {
				t.Error("Zones enabled")
			}
		})
	}
}

func TestInstancesMappingOverride(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("instance \"x\" {\n  match = true\n  name = var.nope\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
cluster_name = "test"
work_dir = %q
terraform { binary = %q }
load_balancer { enabled = false }
instances {
  mapping = "bad.hcl"
  source "infra" { state_file = "x.tfstate" }
}
`, dir, repo.Tofu(t))), filepath.Join(dir, "cloud.conf"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg)
	if err == nil || !strings.Contains(err.Error(), "bad.hcl:3,10") {
		t.Fatalf("New with a bad mapping = %v; want an error naming bad.hcl:3,10", err)
	}
}
