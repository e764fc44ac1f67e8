package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/zclconf/go-cty/cty"
)

// State and backend settings: where local state lives, whether a state is
// empty, the -backend-config file for secret settings, and removing what is
// left of a destroyed workspace.

// stateEmpty reports whether the workspace's state holds no resources.
func (r *runner) stateEmpty(ctx context.Context, spec *Spec) (bool, error) {
	doc, err := r.readState(ctx, spec, "destroy")
	if err != nil {
		return false, err
	}
	n, err := stateResources(doc)
	if err != nil {
		return false, &Error{Op: "destroy", Summary: err.Error()}
	}
	return n == 0, nil
}

// readState returns the workspace's state document (empty when there is
// none): read from the file for the local backend (an encrypted file keeps
// its serial and lineage in clear), else with `tofu state pull`. op names
// the operation in errors.
func (r *runner) readState(ctx context.Context, spec *Spec, op string) ([]byte, error) {
	if isLocal(spec.Backend) && !spec.namedWorkspace() && spec.BackendConfig["path"] == "" {
		b, err := os.ReadFile(localStatePath(r.dir, spec.Backend))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Op: op, Summary: r.scrub.Scrub(err.Error())}
		}
		return b, nil
	}
	pulled, err := stepResult(ctx, r, "state pull", func(ctx context.Context, tf *tfexec.Terraform) (string, error) {
		return tf.StatePull(ctx)
	})
	if err != nil {
		return nil, err
	}
	return []byte(pulled), nil
}

// writeBackendConfig writes settings as an HCL -backend-config file (mode
// 0600) under workDir/.secrets, outside every workspace. Only settings the
// backend cannot read from its environment come here (splitBackendSecrets):
// tofu records them in the workspace's .terraform/terraform.tfstate.
func writeBackendConfig(workDir, name string, settings map[string]string) (string, func(), error) {
	dir := filepath.Join(workDir, ".secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("backend config: %w", err)
	}
	f := hclwrite.NewEmptyFile()
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !hclsyntax.ValidIdentifier(k) {
			return "", nil, fmt.Errorf("backend config: %q is not a valid setting name", k)
		}
		f.Body().SetAttributeValue(k, cty.StringVal(settings[k]))
	}
	path := filepath.Join(dir, name+".tfbackend")
	if err := os.WriteFile(path, f.Bytes(), 0o600); err != nil {
		return "", nil, fmt.Errorf("backend config: %w", err)
	}
	return path, func() { _ = os.Remove(path) }, nil
}

func isLocal(b BackendInfo) bool { return b.Type == "" || b.Type == "local" }

// localStatePath is where the local backend keeps state for dir.
func localStatePath(dir string, b BackendInfo) string {
	if v, ok := b.Attributes["path"]; ok && v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "string" {
		p := v.AsString()
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p
	}
	return filepath.Join(dir, "terraform.tfstate")
}

// removeState deletes what is left of a destroyed workspace: its directory
// dir (which holds local state), its probes' copies under workDir and, for the kubernetes
// backend, the state Secret and lock Lease.
func removeState(ctx context.Context, spec *Spec, dir, workDir string) error {
	if spec.Backend.Type == "kubernetes" {
		if err := removeKubernetesState(ctx, spec.Backend); err != nil {
			return fmt.Errorf("remove kubernetes state: %w", err)
		}
	}
	if isLocal(spec.Backend) {
		p := localStatePath(dir, spec.Backend)
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
