package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// A workspace's state: whether it is empty, reading it, and removing what
// is left of a destroyed workspace.

// stateEmpty reports whether the workspace's state holds no resources.
func (r *runner) stateEmpty(ctx context.Context, spec *Spec) (bool, error) {
	doc, err := r.readState(ctx, spec, "destroy")
	if err != nil {
		return false, err
	}
	n, err := stateResources(doc)
	if err != nil {
		return false, &tofu.Error{Op: "destroy", Summary: err.Error()}
	}
	return n == 0, nil
}

// readState returns the workspace's state document (empty when there is
// none): read from the file for the local backend (an encrypted file keeps
// its serial and lineage in clear), else with `tofu state pull`. op names
// the operation in errors.
func (r *runner) readState(ctx context.Context, spec *Spec, op string) ([]byte, error) {
	if spec.Backend.IsLocal() && !spec.namedWorkspace() && spec.BackendConfig["path"] == "" {
		b, err := os.ReadFile(spec.Backend.LocalStatePath(r.Dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &tofu.Error{Op: op, Summary: r.Scrub.Scrub(err.Error())}
		}
		return b, nil
	}
	pulled, err := tofu.StepResult(ctx, r.Runner, "state pull", func(ctx context.Context, tf *tfexec.Terraform) (string, error) {
		return tf.StatePull(ctx)
	})
	if err != nil {
		return nil, err
	}
	return []byte(pulled), nil
}

// removeState deletes what is left of a destroyed workspace: its directory
// dir (which holds local state), its probes' copies under workDir and, for the kubernetes
// backend, the state Secret and lock Lease.
func removeState(ctx context.Context, spec *Spec, dir, workDir string) error {
	if spec.Backend.Type == "kubernetes" {
		if err := backends.RemoveKubernetesState(ctx, spec.Backend); err != nil {
			return fmt.Errorf("remove kubernetes state: %w", err)
		}
	}
	if spec.Backend.IsLocal() {
		p := spec.Backend.LocalStatePath(dir)
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			for _, f := range []string{p, p + ".backup"} {
				if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("remove state: %w", err)
				}
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove workspace dir: %w", err)
	}
	if err := removeProbes(workDir, spec.Name); err != nil {
		return fmt.Errorf("remove the workspace's probes: %w", err)
	}
	return nil
}
