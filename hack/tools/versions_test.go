package tools

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// kubeWrappers share most of their compiled packages with tfccm (client-go,
// apimachinery, apiserver, component-base, x/net, ...). A package is
// compiled once only if it and everything below it is the same version in
// both builds, so a cold `make test` builds these once instead of twice
// (about two minutes on two cores) only while the versions agree.
var kubeWrappers = []string{"kube-apiserver", "kube-node", "kube-e2e"}

func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	// A replace decides what is built.
	for _, r := range f.Replace {
		if r.New.Version != "" {
			out[r.Old.Path] = r.New.Version
		} else if _, ok := out[r.Old.Path]; ok {
			out[r.Old.Path] = "local:" + r.New.Path
		}
	}
	return out
}

func TestKubeWrappersShareTfccmVersions(t *testing.T) {
	project := requires(t, filepath.Join("..", "..", "go.mod"))
	for _, w := range kubeWrappers {
		t.Run(w, func(t *testing.T) {
			shared := 0
			for mod, v := range requires(t, filepath.Join(w, "go.mod")) {
				pv, ok := project[mod]
				if !ok {
					continue
				}
				shared++
				if pv != v {
					t.Errorf("hack/tools/%s builds %s %s, tfccm %s: align them (in hack/tools/%s: go mod edit -require=%s@%s, then GOFLAGS=-mod=mod go mod tidy)", w, mod, v, pv, w, mod, pv)
				}
			}
			// The Kubernetes libraries are the point: without them the
			// check would pass on anything.
			if shared < 50 || project["k8s.io/client-go"] == "" {
				t.Errorf("hack/tools/%s shares %d modules with tfccm; expected the Kubernetes libraries", w, shared)
			}
		})
	}
}
