package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
)

// Release is a Helm release of the repository's chart (deploy/helm/tfccm)
// installed by InstallChart with the repository's bin/helm.
type Release struct {
	Name, Namespace string

	helm, kubeconfig, dir string
	mu                    sync.Mutex
	uninstalled           bool
}

// InstallChart installs the chart as release name into namespace of the
// cluster the kubeconfig points at, with values (YAML). dir receives the
// values file and helm's cache, config and data directories. baseFiles,
// when given, are values files helm reads before values (a user's values
// file that values overrides).
func InstallChart(kubeconfig, namespace, name, values, dir string, baseFiles ...string) (*Release, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	r := &Release{Name: name, Namespace: namespace, helm: filepath.Join(root, "bin", "helm"), kubeconfig: kubeconfig, dir: dir}
	if _, err := os.Stat(r.helm); err != nil {
		return nil, fmt.Errorf("helm not found at %s: run `make tools`", r.helm)
	}
	vf := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		return nil, err
	}
	args := []string{"install", name, filepath.Join(root, deploy.Chart)}
	for _, f := range append(baseFiles, vf) {
		args = append(args, "--values", f)
	}
	if out, err := r.run(args...); err != nil {
		return nil, fmt.Errorf("helm install: %v\n%s", err, out)
	}
	return r, nil
}

// Uninstall removes the release and waits up to timeout for its resources
// to be gone. Once it succeeded, later calls do nothing.
func (r *Release) Uninstall(timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.uninstalled {
		return nil
	}
	if out, err := r.run("uninstall", r.Name, "--wait", "--timeout", timeout.String()); err != nil {
		return fmt.Errorf("helm uninstall: %v\n%s", err, out)
	}
	r.uninstalled = true
	return nil
}

// Helm runs helm with args against the release's cluster and namespace
// (helm upgrade, a helm uninstall expected to fail, ...) and returns its
// combined output. Uninstall is the cleanup's way to remove the release.
func (r *Release) Helm(args ...string) ([]byte, error) { return r.run(args...) }

func (r *Release) run(args ...string) ([]byte, error) {
	cmd := exec.Command(r.helm, append(args, "--kubeconfig", r.kubeconfig, "--namespace", r.Namespace)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(r.dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(r.dir, "config"), "HELM_DATA_HOME="+filepath.Join(r.dir, "data"))
	return cmd.CombinedOutput()
}
