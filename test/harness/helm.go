package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
)

// Release is a Helm release of the repository's chart (deploy/helm/tfccm,
// InstallChart) or of a packaged one (a release's .tgz, InstallChartFrom),
// managed with the repository's bin/helm.
type Release struct {
	Name, Namespace string

	helm, kubeconfig, dir string
	mu                    sync.Mutex
	uninstalled           bool
}

// InstallChart installs the repository's chart as release name into
// namespace of the cluster the kubeconfig points at, with values (YAML).
// dir receives the values files and helm's cache, config and data
// directories. baseFiles, when given, are values files helm reads before
// values (a user's values file that values overrides).
func InstallChart(kubeconfig, namespace, name, values, dir string, baseFiles ...string) (*Release, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	return InstallChartFrom(kubeconfig, namespace, name, filepath.Join(root, deploy.Chart), values, dir, baseFiles...)
}

// InstallChartFrom is InstallChart of chart: a chart directory or a
// packaged chart (.tgz, as `make release` writes it).
func InstallChartFrom(kubeconfig, namespace, name, chart, values, dir string, baseFiles ...string) (*Release, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	r := &Release{Name: name, Namespace: namespace, helm: filepath.Join(root, "bin", "helm"), kubeconfig: kubeconfig, dir: dir}
	if _, err := os.Stat(r.helm); err != nil {
		return nil, fmt.Errorf("helm not found at %s: run `make tools`", r.helm)
	}
	vf, err := r.valuesFile(values)
	if err != nil {
		return nil, err
	}
	args := []string{"install", name, chart}
	for _, f := range append(baseFiles, vf) {
		args = append(args, "--values", f)
	}
	if out, err := r.run(args...); err != nil {
		return nil, fmt.Errorf("helm install: %v\n%s", err, out)
	}
	return r, nil
}

// Upgrade runs `helm upgrade` of the release to chart (a directory or a
// .tgz) with values (YAML; the whole set, not merged with the release's)
// and returns once helm has applied it, without waiting for the pods.
func (r *Release) Upgrade(chart, values string) error {
	vf, err := r.valuesFile(values)
	if err != nil {
		return err
	}
	if out, err := r.run("upgrade", r.Name, chart, "--values", vf); err != nil {
		return fmt.Errorf("helm upgrade: %v\n%s", err, out)
	}
	return nil
}

// Rollback runs `helm rollback` of the release to revision (0: the
// previous one) without waiting for the pods.
func (r *Release) Rollback(revision int) error {
	args := []string{"rollback", r.Name}
	if revision > 0 {
		args = append(args, strconv.Itoa(revision))
	}
	if out, err := r.run(args...); err != nil {
		return fmt.Errorf("helm rollback: %v\n%s", err, out)
	}
	return nil
}

// valuesFile writes values into a new file in the release's directory.
func (r *Release) valuesFile(values string) (string, error) {
	f, err := os.CreateTemp(r.dir, "values-*.yaml")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(values); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
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
