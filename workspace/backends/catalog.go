package backends

// The catalog: in the state backend itself, one entry per catalogued
// workspace, each a state of its own in a Terraform workspace named after
// it, so that `tofu workspace list` lists them through any backend that
// has workspaces (kubernetes, pg, s3, gcs, azurerm, consul; not http) and
// the workspaces' encryption configuration encrypts the catalog too. What
// an entry says is the engine's; the catalog stores its bytes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// CatalogName is the workspace name whose backend key holds the catalog.
// It is not a name tfccm gives a workspace of its own.
const CatalogName = "tfccm-catalog"

// CatalogDir is the catalog's tofu directory under the work dir (not a
// valid workspace name, so it is never listed as one).
const CatalogDir = ".catalog"

// catalogOutput is the output of an entry's state that holds the entry.
const catalogOutput = "tfccm_applied"

// Runner runs one tofu command in the catalog's directory (package
// tofu's Runner.Step).
type Runner interface {
	Step(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error
}

// Catalog runs the catalog's tofu commands in its directory, one command
// sequence at a time (the selected Terraform workspace is the
// directory's).
type Catalog struct {
	dir string
	// runner is a runner in dir, one per command sequence; open writes
	// the catalog's module into dir and initializes it with r.
	runner func() Runner
	open   func(ctx context.Context, r Runner) error
	// valid tells the names of catalogued workspaces from others.
	valid  func(name string) bool
	mu     sync.Mutex
	inited bool
}

// NewCatalog is the catalog in dir: runner returns a runner there, open
// writes and initializes dir (once per process), valid tells a
// workspace's name.
func NewCatalog(dir string, runner func() Runner, open func(ctx context.Context, r Runner) error, valid func(string) bool) *Catalog {
	return &Catalog{dir: dir, runner: runner, open: open, valid: valid}
}

// ready initializes the catalog directory once per process. The caller
// holds c.mu.
func (c *Catalog) ready(ctx context.Context) (Runner, error) {
	r := c.runner()
	if c.inited {
		return r, nil
	}
	if err := c.open(ctx, r); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c.inited = true
	return r, nil
}

// Put writes name's entry unless same (if set) says the entry there
// already is it: then the entry is read first, and nothing is written.
// It reports whether it wrote.
func (c *Catalog) Put(ctx context.Context, name string, entry []byte, same func(old []byte) bool) (bool, error) {
	doc, err := json.Marshal(map[string]any{
		"version": 4, "terraform_version": "1.6.0", "serial": 1, "lineage": "tfccm-catalog-" + name,
		"outputs":   map[string]any{catalogOutput: map[string]any{"value": string(entry), "type": "string"}},
		"resources": []any{},
	})
	if err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return false, err
	}
	names, err := listWorkspaces(ctx, r, c.valid)
	if err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	if slices.Contains(names, name) {
		if err := selectWorkspace(ctx, r, name); err != nil {
			return false, fmt.Errorf("catalog %s: %w", name, err)
		}
		if same != nil {
			if old, err := pullEntry(ctx, r); err == nil && same(old) {
				return false, nil
			}
		}
	} else if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceNew(ctx, name)
	}); err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	if err := c.push(ctx, r, doc); err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	return true, nil
}

// push writes doc as the selected workspace's state.
func (c *Catalog) push(ctx context.Context, r Runner, doc []byte) error {
	f, err := os.CreateTemp(c.dir, "entry-*.tfstate")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(doc); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return r.Step(ctx, "state_push", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.StatePush(ctx, filepath.Base(f.Name()), tfexec.Force(true), tfexec.LockTimeout("30s"))
	})
}

// Remove deletes name's entry (its workspace was destroyed); an entry
// that does not exist is no error.
func (c *Catalog) Remove(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return err
	}
	names, err := listWorkspaces(ctx, r, c.valid)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	if !slices.Contains(names, name) {
		return nil
	}
	if err := selectWorkspace(ctx, r, "default"); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceDelete(ctx, name, tfexec.Force(true), tfexec.LockTimeout("30s"))
	}); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	return nil
}

// List lists the names of the workspaces the catalog holds an entry for,
// read from the state backend.
func (c *Catalog) List(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	names, err := listWorkspaces(ctx, r, c.valid)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return names, nil
}

// Get reads name's entry from the state backend.
func (c *Catalog) Get(ctx context.Context, name string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	if err := selectWorkspace(ctx, r, name); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	entry, err := pullEntry(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	return entry, nil
}

// pullEntry reads the entry of the selected workspace.
func pullEntry(ctx context.Context, r Runner) ([]byte, error) {
	var doc string
	if err := r.Step(ctx, "state_pull", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		doc, err = tf.StatePull(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	var st struct {
		Outputs map[string]struct {
			Value string `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	o, ok := st.Outputs[catalogOutput]
	if !ok {
		return nil, errors.New("the state holds no entry")
	}
	return []byte(o.Value), nil
}

// selectWorkspace selects the catalog's Terraform workspace name, which
// exists.
func selectWorkspace(ctx context.Context, r Runner, name string) error {
	return r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceSelect(ctx, name)
	})
}

// listWorkspaces lists the catalog's Terraform workspaces that valid
// accepts, sorted.
func listWorkspaces(ctx context.Context, r Runner, valid func(string) bool) ([]string, error) {
	var all []string
	if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		all, _, err = tf.WorkspaceList(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(all))
	for _, n := range all {
		if n != "default" && valid(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
