package instances

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances/mapping"
	"github.com/tfccm/tfccm/internal/repo"
)

func tfConfig(t testing.TB) *config.Terraform {
	return &config.Terraform{Binary: repo.Tofu(t), Timeout: time.Minute}
}

// node is one node of the test infra (testdata/infra).
type node struct {
	Address      string  `json:"address"`
	AddressV6    *string `json:"address_v6,omitempty"`
	Zone         string  `json:"zone"`
	Region       string  `json:"region"`
	InstanceType string  `json:"instance_type"`
	Running      *bool   `json:"running,omitempty"`
}

// infra is a real OpenTofu working directory with the local cloud's
// instance state shape.
type infra struct {
	t   testing.TB
	dir string
	tf  *tfexec.Terraform
}

func newInfra(t testing.TB) *infra {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/infra/main.tf")
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
	env, _, err := Env(&config.Terraform{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	if err := tf.Init(context.Background()); err != nil {
		t.Fatalf("tofu init: %v", err)
	}
	return &infra{t: t, dir: dir, tf: tf}
}

// apply makes the infra hold exactly nodes.
func (in *infra) apply(nodes map[string]node) {
	in.t.Helper()
	b, err := json.Marshal(map[string]any{"nodes": nodes})
	if err != nil {
		in.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in.dir, "nodes.auto.tfvars.json"), b, 0o644); err != nil {
		in.t.Fatal(err)
	}
	if err := in.tf.Apply(context.Background()); err != nil {
		in.t.Fatalf("tofu apply: %v", err)
	}
}

func (in *infra) stateFile() string { return filepath.Join(in.dir, "terraform.tfstate") }

func ptr[T any](v T) *T { return &v }

func twoNodes() map[string]node {
	return map[string]node{
		"a": {Address: "10.250.0.2", AddressV6: ptr("fd00:250::2"), Zone: "zone-a", Region: "region-1", InstanceType: "small"},
		"b": {Address: "10.250.0.3", Zone: "zone-b", Region: "region-1", InstanceType: "large", Running: ptr(false)},
	}
}

func localMapping(t testing.TB) *mapping.Mapping {
	t.Helper()
	src, err := os.ReadFile("../templates/local/instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapping.Parse(src, "instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeClock is a settable clock for TTL and staleness decisions.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// funcSource is a Source for pure-logic tests of the Store.
type funcSource struct {
	name string
	fn   func(context.Context) (*tfjson.State, error)
}

func (s *funcSource) Name() string                                    { return s.name }
func (s *funcSource) Read(ctx context.Context) (*tfjson.State, error) { return s.fn(ctx) }
