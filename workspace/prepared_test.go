package workspace

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// preparedModule needs a provider (the lock file and the prepared
// .terraform are about providers) and creates one object.
const preparedModule = `terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}

provider "lbhost" {
  netns = "tfccm-none"
}

variable "n" {
  type = number
}

resource "terraform_data" "x" {
  input = var.n
}

output "n" {
  value = terraform_data.x.output
}
`

// preparedSpec is a workspace of preparedModule with its backend block
// (attrs) as tfccm renders one, and module text extra appended.
func preparedSpec(name string, n int, backend backends.Info, extra string) Spec {
	s := Spec{Name: name, Backend: backend, Files: map[string][]byte{
		"main.tf":           []byte(preparedModule + extra),
		"tfccm.auto.tfvars": []byte(fmt.Sprintf("n = %d\n", n)),
	}}
	if len(backend.Attributes) > 0 {
		s.Files["tfccm_backend.tf"] = backendFile(backend)
	}
	s.Hash = s.ContentHash()
	return s
}

// backendFile is a backend block of b's settings, as tfccm writes one.
func backendFile(b backends.Info) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body().AppendNewBlock("terraform", nil).Body().AppendNewBlock("backend", []string{b.Type}).Body()
	keys := make([]string, 0, len(b.Attributes))
	for k := range b.Attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		body.SetAttributeValue(k, b.Attributes[k])
	}
	return f.Bytes()
}

// applyAndWait applies spec and waits for it.
func applyAndWait(t *testing.T, e *Engine, spec Spec) Status {
	t.Helper()
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := e.Wait(ctx, spec.Name, spec.Hash)
	if err != nil {
		t.Fatalf("apply %s: %v", spec.Name, err)
	}
	return st
}

// backendRecordOf is the backend record (.terraform/terraform.tfstate) of
// workspace name: its settings and hash.
func backendRecordOf(t *testing.T, e *Engine, name string) (map[string]any, float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.Dir(name), ".terraform", backends.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Backend struct {
			Config map[string]any `json:"config"`
			Hash   float64        `json:"hash"`
		} `json:"backend"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Backend.Config, doc.Backend.Hash
}

// TestPreparedInit: the first workspace of a template runs init; the
// next ones start from its prepared .terraform without a tofu process,
// each with its own backend settings (its state lands at its own path,
// tofu adopts the record and hashes it itself); a seeded workspace whose
// template changes drops the shared links before init writes; another
// template is not seeded.
func TestPreparedInit(t *testing.T) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	bin, calls := countingBinary(t)
	work := t.TempDir()
	e := newTestEngine(t, Options{Binary: bin, CLIConfigFile: cliConfig, WorkDir: work})
	local := func(name string) backends.Info {
		return backends.Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal(filepath.Join(work, "state", name+".tfstate"))}}
	}
	if err := os.MkdirAll(filepath.Join(work, "state"), 0o700); err != nil {
		t.Fatal(err)
	}

	a := preparedSpec("a", 1, local("a"), "")
	applyAndWait(t, e, a)
	if n := count(calls(), "init"); n != 1 {
		t.Fatalf("%d inits for the first workspace, want 1", n)
	}
	for _, name := range []string{"b", "c"} {
		st := applyAndWait(t, e, preparedSpec(name, 2, local(name), ""))
		if string(st.Outputs["n"]) != "2" {
			t.Errorf("%s: outputs %v", name, st.Outputs)
		}
		config, hash := backendRecordOf(t, e, name)
		if config["path"] != filepath.Join(work, "state", name+".tfstate") {
			t.Errorf("%s's backend record names %v, want its own state", name, config["path"])
		}
		if hash == 0 {
			t.Errorf("%s's backend record was not adopted by tofu (hash still 0)", name)
		}
		if !exists(filepath.Join(work, "state", name+".tfstate")) {
			t.Errorf("%s's state is not at its own path", name)
		}
	}
	if n := count(calls(), "init"); n != 1 {
		t.Errorf("%d inits for three workspaces of one template, want 1 (calls %v)", n, calls())
	}
	// a's state holds only a's object: no seeded workspace wrote there.
	if b, err := os.ReadFile(filepath.Join(work, "state", "a.tfstate")); err != nil || strings.Count(string(b), `"terraform_data"`) != 1 || !strings.Contains(string(b), `"value": 1`) {
		t.Errorf("a's state changed by another workspace (%v):\n%s", err, b)
	}

	// b's template changes: init runs there, over its own files, not the
	// links it shares with the prepared entry.
	bChanged := preparedSpec("b", 3, local("b"), "\n# changed\n")
	applyAndWait(t, e, bChanged)
	if n := count(calls(), "init"); n != 2 {
		t.Errorf("%d inits after b's template changed, want 2", n)
	}
	if exists(filepath.Join(e.Dir("b"), ".terraform", tofu.SeededMarker)) {
		t.Error("b still marked as seeded after its own init")
	}
	_ = filepath.WalkDir(filepath.Join(e.Dir("b"), ".terraform"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
					t.Errorf("%s is still shared (%d links) after b's own init", p, st.Nlink)
				}
			}
		}
		return nil
	})
}

// TestPreparedInitKubernetes: with the kubernetes backend, a seeded
// workspace keeps its state in its own Secret, never in its donor's. With
// tofu run by a runner (Options.Exec: the runner pods, which carry
// .terraform but not the providers) new workspaces are seeded the same
// way: each init in a pod listed every state Secret.
func TestPreparedInitKubernetes(t *testing.T) {
	c := devcluster.ForTest(t)
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, runner := range []bool{false, true} {
		t.Run(fmt.Sprintf("runner=%v", runner), func(t *testing.T) {
			preparedInitKubernetes(t, c, cliConfig, runner)
		})
	}
}

func preparedInitKubernetes(t *testing.T, c *devcluster.Cluster, cliConfig string, runner bool) {
	bin, calls := countingBinary(t)
	opts := Options{Binary: bin, CLIConfigFile: cliConfig}
	prefix := "prep-"
	if runner {
		opts.Exec, prefix = &Exec{Path: bin}, "prep-runner-"
	}
	e := newTestEngine(t, opts)
	for i, name := range []string{prefix + "a", prefix + "b"} {
		st := applyAndWait(t, e, preparedSpec(name, i+1, kubernetesBackendInfo(name, c.Kubeconfig()), ""))
		if string(st.Outputs["n"]) != fmt.Sprint(i+1) {
			t.Errorf("%s: outputs %v", name, st.Outputs)
		}
	}
	if n := count(calls(), "init"); n != 1 {
		t.Errorf("%d inits for two workspaces of one template, want 1 (calls %v)", n, calls())
	}
	// The outputs came from the state Secrets, not from tofu.
	if n := count(calls(), "output"); n != 0 {
		t.Errorf("%d tofu output runs, want 0: outputs are read from the state Secret (calls %v)", n, calls())
	}
	for i, name := range []string{prefix + "a", prefix + "b"} {
		secret, err := c.Client().CoreV1().Secrets("default").Get(t.Context(), "tfstate-default-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s's state Secret: %v", name, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(secret.Data["tfstate"]))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Outputs map[string]struct {
				Value any `json:"value"`
			} `json:"outputs"`
		}
		if err := json.Unmarshal(doc, &st); err != nil {
			t.Fatal(err)
		}
		if got := st.Outputs["n"].Value; got != float64(i+1) {
			t.Errorf("%s's Secret holds n = %v, want %d (another workspace's state?)", name, got, i+1)
		}
	}
}
