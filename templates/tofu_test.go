package templates

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	ctyjson "github.com/zclconf/go-cty/cty/json"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

// TestTofuRoundTrip renders hostile values, applies the workspace with the
// real OpenTofu and checks that the template saw exactly the values tfccm
// wrote: OpenTofu parses the tfvars with the same semantics as the test's
// own checks, and no template sequence was evaluated.
func TestTofuRoundTrip(t *testing.T) {
	tofu := repo.Tofu(t)
	set := fullSet(t)
	work := t.TempDir()
	cfg := testConfig(t, `
cluster_name = "prod-eu"
work_dir     = "`+work+`"
load_balancer {
  settings = { vip_pool = "10.252.0.0/24" }
}
`)
	hostile := []string{"${file(\"/etc/passwd\")}", "%{ for x in [1] }${x}%{ endfor }", "$${literal}", "%%{x}", "a\"b\\c\n\td", "<<EOT\nEOT", "caf\u00e9 \U0001F600 \u202e", "\ufeffbom", "x$", "%"}
	s := svc(func(s *corev1.Service) {
		s.Annotations = map[string]string{}
		for i, h := range hostile {
			s.Annotations["example.com/k"+string(rune('a'+i))] = h
			s.Labels[h] = h
		}
		s.Spec.Ports[0].Name = hostile[0]
	})
	nodes := testNodes()
	nodes[2].Labels = map[string]string{hostile[1]: hostile[2], hostile[7]: hostile[6]}
	ws, err := set.renderLoadBalancer(cfg, s, nodes, Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "ws")
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	cliCfg := filepath.Join(work, "tofurc")
	if err := os.WriteFile(cliCfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tf := func(args ...string) []byte {
		t.Helper()
		cmd := testkit.Tofu{Binary: tofu, Dir: dir, CLIConfig: cliCfg, Env: []string{"HOME=" + work}}.Command(ctx, args...)
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("tofu %v: %v\n%s\n%s", args, err, out, stderr)
		}
		return out
	}
	tf("init", "-input=false", "-no-color")
	tf("apply", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(filepath.Join(work, "state", ws.Name+".tfstate")); err != nil {
		t.Errorf("local backend state not under work_dir/state: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(tf("output", "-json", "inputs"), &got); err != nil {
		t.Fatal(err)
	}
	for name, v := range ws.inputs {
		b, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if name == SettingsVar {
			// OpenTofu applies the declared optional default.
			want.(map[string]any)["size"] = "small"
		}
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("input %s as OpenTofu sees it:\n%v\nwant\n%v", name, got[name], want)
		}
	}
	ann := got["service"].(map[string]any)["annotations"].(map[string]any)
	for i, h := range hostile {
		if ann["example.com/k"+string(rune('a'+i))] != h {
			t.Errorf("annotation %d: OpenTofu saw %q, want %q", i, ann["example.com/k"+string(rune('a'+i))], h)
		}
	}
	if len(got) != 6 {
		t.Errorf("template saw %d inputs, want 6", len(got))
	}
	// The rendered files are `tofu fmt` clean.
	tf("fmt", "-check", "-no-color", TfvarsFile, BackendFile)
}
