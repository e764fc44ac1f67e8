package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	"k8s.io/klog/v2"
)

// The catalog keeps, in the state backend itself, the last applied
// configuration of every workspace that has an owner (a load balancer's
// Service), so that a controller whose work dir is empty (a new pod: the
// chart's work dir is an emptyDir) can still find a workspace whose owner
// is gone and destroy it. It is one more state in the backend, under the
// key the backend renders for CatalogName, with one Terraform workspace per
// catalogued workspace: `tofu workspace list` lists them through any
// backend that has workspaces (kubernetes, pg, s3, gcs, azurerm, consul;
// not http), and tofu writes each entry as a state, so the encryption
// configuration of the workspaces encrypts the catalog too. An entry holds
// the rendered files (which never hold secrets: secret backend settings
// and credentials reach tofu through its environment) and the owner.

// CatalogName is the workspace name whose backend key holds the catalog.
// It is not a name tfccm gives a workspace of its own.
const CatalogName = "tfccm-catalog"

// catalogDir is the catalog's tofu directory under the work dir (not a
// valid workspace name, so it is never listed as one).
const catalogDir = ".catalog"

// catalogOutput is the output of an entry's state that holds the entry.
const catalogOutput = "tfccm_applied"

// Owner is the Kubernetes object a workspace belongs to.
type Owner struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// CatalogEntry is a workspace's last applied configuration as the catalog
// keeps it.
type CatalogEntry struct {
	Name      string                 `json:"name"`
	Owner     Owner                  `json:"owner"`
	Module    string                 `json:"module,omitempty"`
	Hash      string                 `json:"hash"`
	AppliedAt time.Time              `json:"applied_at"`
	Files     map[string][]byte      `json:"files"`
	Modes     map[string]fs.FileMode `json:"modes,omitempty"`
}

// Spec is the entry's workspace, without its backend settings (the caller
// sets them: templates.WithBackend).
func (c CatalogEntry) Spec() Spec {
	s := Spec{Name: c.Name, Module: c.Module, Files: c.Files, Modes: c.Modes, Owner: &c.Owner}
	return s
}

// catalog runs tofu in the catalog directory, one command sequence at a
// time (the selected Terraform workspace is the directory's).
type catalog struct {
	e      *tofuSetup
	spec   *Spec
	mu     sync.Mutex
	inited bool
}

func (c *catalog) runner() *runner {
	env, _ := splitBackendSecrets(c.spec)
	return &runner{e: c.e, dir: filepath.Join(c.e.opts.WorkDir, catalogDir), env: env, backend: c.spec.Backend,
		scrub: c.e.scrub.With(mapValues(c.spec.BackendConfig)), unlocked: true}
}

// catalogPut records spec, just applied, in the catalog unless its hash
// is already there. A failure is logged: the apply stands, and the next
// run of the workspace (a drift check, a change) tries again.
// A nil catalog records nothing.
func (c *catalog) catalogPut(ctx context.Context, spec *Spec, rec *record) {
	if c == nil || spec.Owner == nil || rec.Catalogued == spec.Hash {
		return
	}
	if err := c.put(ctx, spec, rec.AppliedAt); err != nil {
		klog.ErrorS(err, "Record the applied configuration in the state backend's catalog", "workspace", spec.Name)
		return
	}
	rec.Catalogued = spec.Hash
}

// catalogRemove removes a destroyed workspace's catalog entry. A failure
// is logged: a leftover entry names a workspace whose state holds
// nothing, which the orphan sweep destroys (a no-op) and removes again.
func (c *catalog) catalogRemove(ctx context.Context, name string) {
	if c == nil {
		return
	}
	if err := c.remove(ctx, name); err != nil {
		klog.ErrorS(err, "Remove a destroyed workspace from the state backend's catalog", "workspace", name)
	}
}

// ready writes the catalog directory and initializes it once per process.
// The caller holds c.mu.
func (c *catalog) ready(ctx context.Context) (*runner, error) {
	r := c.runner()
	if c.inited {
		return r, nil
	}
	if err := c.spec.WriteDir(r.dir); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := r.init(ctx, c.spec, false); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c.inited = true
	return r, nil
}

// selectWorkspace selects the catalog's Terraform workspace name, which
// exists.
func (r *runner) selectWorkspace(ctx context.Context, name string) error {
	return r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceSelect(ctx, name)
	})
}

// selectOrCreate selects the catalog's Terraform workspace name, creating
// it when it is not there yet.
func (r *runner) selectOrCreate(ctx context.Context, name string) error {
	names, err := r.listWorkspaces(ctx)
	if err != nil {
		return err
	}
	if slices.Contains(names, name) {
		return r.selectWorkspace(ctx, name)
	}
	return r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceNew(ctx, name)
	})
}

// put writes spec's entry (spec was just applied).
func (c *catalog) put(ctx context.Context, spec *Spec, at time.Time) error {
	entry := CatalogEntry{Name: spec.Name, Owner: *spec.Owner, Module: spec.Module, Hash: spec.Hash, AppliedAt: at.UTC(), Files: spec.Files, Modes: spec.Modes}
	value, err := json.Marshal(entry)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	doc, err := json.Marshal(map[string]any{
		"version": 4, "terraform_version": "1.6.0", "serial": 1, "lineage": "tfccm-catalog-" + spec.Name,
		"outputs":   map[string]any{catalogOutput: map[string]any{"value": string(value), "type": "string"}},
		"resources": []any{},
	})
	if err != nil {
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return err
	}
	if err := r.selectOrCreate(ctx, spec.Name); err != nil {
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	f, err := os.CreateTemp(r.dir, "entry-*.tfstate")
	if err != nil {
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(doc); err != nil {
		f.Close()
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	if err := r.step(ctx, "state_push", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.StatePush(ctx, filepath.Base(f.Name()), tfexec.Force(true), tfexec.LockTimeout("30s"))
	}); err != nil {
		return fmt.Errorf("catalog %s: %w", spec.Name, err)
	}
	return nil
}

// remove deletes name's entry (its workspace was destroyed); an entry
// that does not exist is no error.
func (c *catalog) remove(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return err
	}
	names, err := r.listWorkspaces(ctx)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	if !slices.Contains(names, name) {
		return nil
	}
	if err := r.selectWorkspace(ctx, "default"); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	if err := r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceDelete(ctx, name, tfexec.Force(true), tfexec.LockTimeout("30s"))
	}); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	return nil
}

func (r *runner) listWorkspaces(ctx context.Context) ([]string, error) {
	all, err := stepResult(ctx, r, "workspace", func(ctx context.Context, tf *tfexec.Terraform) ([]string, error) {
		names, _, err := tf.WorkspaceList(ctx)
		return names, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(all))
	for _, n := range all {
		if n != "default" && validName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ErrNoCatalog is returned by the catalog's readers when the engine keeps
// no catalog (Options.Catalog is nil: the local backend, or one without
// workspaces).
var ErrNoCatalog = errors.New("no catalog: the state backend keeps none")

// Catalogued lists the names of the workspaces the catalog holds an entry
// for, read from the state backend.
func (e *Engine) Catalogued(ctx context.Context) ([]string, error) {
	c := e.catalog
	if c == nil {
		return nil, ErrNoCatalog
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	names, err := r.listWorkspaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return names, nil
}

// CatalogEntry reads workspace name's entry from the state backend.
func (e *Engine) CatalogEntry(ctx context.Context, name string) (CatalogEntry, error) {
	c := e.catalog
	if c == nil {
		return CatalogEntry{}, ErrNoCatalog
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return CatalogEntry{}, err
	}
	if err := r.selectWorkspace(ctx, name); err != nil {
		return CatalogEntry{}, fmt.Errorf("catalog %s: %w", name, err)
	}
	doc, err := stepResult(ctx, r, "state_pull", func(ctx context.Context, tf *tfexec.Terraform) (string, error) {
		return tf.StatePull(ctx)
	})
	if err != nil {
		return CatalogEntry{}, fmt.Errorf("catalog %s: %w", name, err)
	}
	var st struct {
		Outputs map[string]struct {
			Value string `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		return CatalogEntry{}, fmt.Errorf("catalog %s: decode state: %w", name, err)
	}
	o, ok := st.Outputs[catalogOutput]
	if !ok {
		return CatalogEntry{}, fmt.Errorf("catalog %s: the state holds no entry", name)
	}
	var entry CatalogEntry
	if err := json.Unmarshal([]byte(o.Value), &entry); err != nil {
		return CatalogEntry{}, fmt.Errorf("catalog %s: decode entry: %w", name, err)
	}
	if entry.Name != name {
		return CatalogEntry{}, fmt.Errorf("catalog %s: the entry names workspace %q", name, entry.Name)
	}
	return entry, nil
}
