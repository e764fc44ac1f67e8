package templates

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/config"
)

// configMapDir mimics the kubelet's atomic writer for a ConfigMap volume:
// the data lives in a timestamped directory, "..data" points at it, and each
// top-level entry is a symlink through "..data". update swaps "..data" with
// a rename, exactly as the kubelet does.
type configMapDir struct {
	t       *testing.T
	dir     string
	version int
}

func (c *configMapDir) update(files map[string]string) {
	c.t.Helper()
	c.version++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", c.version, c.version)
	tops := map[string]bool{}
	for p, content := range files {
		full := filepath.Join(c.dir, ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
		tops[strings.Split(p, "/")[0]] = true
	}
	tmp := filepath.Join(c.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		c.t.Fatal(err)
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !tops[e.Name()] {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
	for top := range tops {
		link := filepath.Join(c.dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", top), link); err != nil {
			c.t.Fatal(err)
		}
	}
}

const overrideLB = `variable "cluster_name" {
  type = string
}

output "ingress" {
  value = [{ hostname = "override.example" }]
}
`

func TestLoaderOverrideSwap(t *testing.T) {
	base := fullSet(t)
	cm := &configMapDir{t: t, dir: t.TempDir()}
	cm.update(map[string]string{"loadbalancer/main.tf": overrideLB, "README.md": "ignored"})

	l, err := newLoader(base, cm.dir)
	if err != nil {
		t.Fatal(err)
	}
	l.interval = 10 * time.Millisecond
	s1 := l.Set()
	lb, _ := s1.Module("loadbalancer")
	if lb.Origin != cm.dir+"/loadbalancer" || len(lb.Variables) != 1 {
		t.Fatalf("override not used: origin %s, %d variables", lb.Origin, len(lb.Variables))
	}
	if r, _ := s1.Module("routes"); r.Origin != "testdata/sets/full/routes" {
		t.Fatalf("routes should still come from the base set, got %s", r.Origin)
	}
	if got := strings.Join(s1.Variants(), ","); got != "default,internal" {
		t.Fatalf("variants %s", got)
	}
	// Rendering with the override: only cluster_name is written.
	ws, err := s1.RenderLoadBalancer(testConfig(t, baseConfig), svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "cluster_name = \"prod-eu\"\n"; !strings.HasSuffix(string(ws.Files[TfvarsFile]), want) {
		t.Fatalf("tfvars:\n%s", ws.Files[TfvarsFile])
	}

	// Swap: add a variant and an instances.hcl.
	cm.update(map[string]string{"loadbalancer/main.tf": overrideLB, "loadbalancer.public/main.tf": overrideLB, "instances.hcl": "instance \"x\" {}\n"})
	if changed, err := l.reload(); err != nil || !changed {
		t.Fatalf("reload: changed=%v err=%v", changed, err)
	}
	s2 := l.Set()
	if got := strings.Join(s2.Variants(), ","); got != "default,internal,public" {
		t.Fatalf("variants after swap %s", got)
	}
	if _, name, _ := s2.InstancesMapping(); name != cm.dir+"/instances.hcl" {
		t.Fatalf("instances from %s", name)
	}
	if changed, err := l.reload(); err != nil || changed {
		t.Fatalf("reload without change: changed=%v err=%v", changed, err)
	}

	// An invalid override is rejected with file:line; the last good set serves.
	cm.update(map[string]string{"loadbalancer/main.tf": "variable \"x\" {\n", "loadbalancer.public/main.tf": overrideLB})
	_, err = l.reload()
	if err == nil || !strings.Contains(err.Error(), cm.dir+"/loadbalancer/main.tf:1,") || !strings.Contains(err.Error(), "keeping the last good templates") {
		t.Fatalf("invalid override: %v", err)
	}
	if l.Set() != s2 || l.Err() == nil {
		t.Fatal("invalid override replaced the serving set")
	}

	// The watch loop picks up a fix on its own.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	cm.update(map[string]string{"routes/main.tf": "output \"routes\" {\n  value = {}\n}\n"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := l.Set()
		r, _ := s.Module("routes")
		lb, _ := s.Module("loadbalancer")
		if r.Origin == cm.dir+"/routes" {
			// The override no longer has loadbalancer/: the built-in one is back.
			if lb.Origin != "testdata/sets/full/loadbalancer" {
				t.Fatalf("loadbalancer from %s", lb.Origin)
			}
			if l.Err() != nil {
				t.Fatalf("error after fix: %v", l.Err())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not pick up the new override")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewLoader(t *testing.T) {
	cfg := &config.Config{ClusterName: "c", TemplateSet: "local"}
	l, err := NewLoader(cfg)
	if err != nil {
		t.Fatalf("built-in set: %v", err)
	}
	if _, ok := l.Set().Module("loadbalancer"); !ok {
		t.Fatal("built-in local set has no loadbalancer module")
	}
	cfg.TemplateSet = "nope"
	if _, err := NewLoader(cfg); err == nil || !strings.Contains(err.Error(), `template_set "nope" is not built in (built in: baremetal, digitalocean, exoscale, google, hcloud, local, nodes, oci, openstack, proxmox, vsphere)`) {
		t.Fatalf("unknown set: %v", err)
	}
	bad := t.TempDir()
	if err := os.MkdirAll(bad+"/routes", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad+"/routes/main.tf", []byte("variable \"routes\" {\n  type = string\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = &config.Config{ClusterName: "c", TemplateSet: "local", OverrideDir: bad}
	_, err = NewLoader(cfg)
	if err == nil || !strings.Contains(err.Error(), bad+"/routes/main.tf:1,1") || !strings.Contains(err.Error(), `output "routes"`) {
		t.Fatalf("invalid override at start: %v", err)
	}
	cfg.OverrideDir = bad + "/missing"
	if _, err := NewLoader(cfg); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing override dir: %v", err)
	}
}
