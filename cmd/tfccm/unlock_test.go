package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/workspace"
)

// TestUnlockAgainstAPIServer: `tfccm unlock` shows who holds a workspace's
// state lock (kubernetes backend), refuses to take someone else's without
// --force, and releases it with --force.
func TestUnlockAgainstAPIServer(t *testing.T) {
	cluster := devcluster.ForTest(t)
	kube := cluster.Client()
	ctx := context.Background()
	work := t.TempDir()
	cfgPath := filepath.Join(t.TempDir(), "cloud.hcl")
	src := `cluster_name = "unl"
work_dir     = "` + work + `"
terraform {
  binary = "` + repo.Tofu(t) + `"
}
backend "kubernetes" {
  config_path = "` + cluster.Kubeconfig() + `"
  namespace   = "default"
}
`
	if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// A workspace the controller applied.
	const name = "lb-unl-0123456789"
	spec, err := templates.Backend(cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	spec.Files["main.tf"] = []byte(`resource "terraform_data" "x" { input = 1 }` + "\n")
	spec.Hash = spec.ContentHash()
	e, err := workspace.New(workspace.Options{Binary: repo.Tofu(t), WorkDir: work, Identity: "tfccm/unl", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ectx, cancel := context.WithCancel(ctx)
	e.Start(ectx)
	defer func() { cancel(); <-e.Done() }()
	if _, err := e.Apply(*spec); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if _, err := e.Wait(wctx, name, spec.Hash); err != nil {
		t.Fatal(err)
	}

	base := []string{"unlock", "--config", cfgPath, "--workspace", name}
	var out, errOut bytes.Buffer
	if code := run(base, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "not locked") {
		t.Fatalf("unlocked: exit %d: %s %s", code, out.String(), errOut.String())
	}

	// Someone else holds it.
	leaseName := "lock-tfstate-default-" + name
	lease, err := kube.CoordinationV1().Leases("default").Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := "44444444-cccc"
	info, _ := json.Marshal(map[string]string{"ID": id, "Operation": "OperationTypeApply", "Who": "alice@laptop", "Version": "1.12.6", "Created": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano), "Path": "", "Info": ""})
	lease.Spec.HolderIdentity = &id
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations["app.terraform.io/lock-info"] = string(info)
	if _, err := kube.CoordinationV1().Leases("default").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("default").Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ptrString(l.Spec)
	}

	out.Reset()
	errOut.Reset()
	if code := run(append(base, "--dry-run"), &out, &errOut); code != exitOK || !strings.Contains(out.String(), "alice@laptop (Apply)") || !strings.Contains(out.String(), id) {
		t.Fatalf("dry run: exit %d: %s %s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(base, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "Not releasing") || holder() != id {
		t.Fatalf("someone else's lock: exit %d, holder %q: %s %s", code, holder(), out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(append(base, "--force"), &out, &errOut); code != exitOK || !strings.Contains(out.String(), "Released lock "+id) || holder() != "" {
		t.Fatalf("--force: exit %d, holder %q: %s %s", code, holder(), out.String(), errOut.String())
	}
}

func ptrString(s coordinationv1.LeaseSpec) string {
	if s.HolderIdentity == nil {
		return ""
	}
	return *s.HolderIdentity
}
