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
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// CatalogName is the workspace name whose backend key holds the catalog.
// It is not a name tfccm gives a workspace of its own.
const CatalogName = "tfccm-catalog"

// CatalogDir is the catalog's first tofu directory under the work dir
// (not a valid workspace name, so it is never listed as one).
const CatalogDir = ".catalog"

// CatalogDirs are n tofu directories for the catalog under workDir:
// CatalogDir, then CatalogDir-2 to CatalogDir-n.
func CatalogDirs(workDir string, n int) []string {
	dirs := []string{filepath.Join(workDir, CatalogDir)}
	for i := 2; i <= n; i++ {
		dirs = append(dirs, filepath.Join(workDir, fmt.Sprintf("%s-%d", CatalogDir, i)))
	}
	return dirs
}

// catalogOutput is the output of an entry's state that holds the entry.
const catalogOutput = "tfccm_applied"

// Runner runs one tofu command in one of the catalog's directories
// (package tofu's Runner.Step).
type Runner interface {
	Step(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error
}

// Catalog runs the catalog's tofu commands in its directories. The
// Terraform workspace a command works on is its directory's selected one,
// so each directory runs one command sequence at a time; several
// directories (the engine has one per unit of parallelism) let entries of
// different workspaces be written at once.
//
// A write is one `tofu state push`: the entry's workspace is selected by
// writing the directory's workspace file (what `tofu workspace select`
// writes, without the listing of every workspace it and `workspace new`
// run first, which with the kubernetes backend reads every state Secret),
// and the backend creates a workspace's state on its first push. The
// names the catalog holds are listed once per process and kept, so a
// write of a new entry reads nothing.
type Catalog struct {
	// free holds the directories no command sequence is using.
	free chan *catalogDir
	// runner is a runner in a directory; open writes the catalog's module
	// into a directory and initializes it with r (once per process).
	runner func(dir string) Runner
	open   func(ctx context.Context, dir string, r Runner) error
	// valid tells the names of catalogued workspaces from others.
	valid func(name string) bool

	mu sync.Mutex
	// known is the names the catalog holds, as this process last listed
	// and since wrote or removed them (nil until the first listing).
	known map[string]bool
}

// catalogDir is one of the catalog's tofu directories.
type catalogDir struct {
	path   string
	inited bool
}

// NewCatalog is the catalog in dirs (at least one): runner returns a
// runner in one of them, open writes and initializes one (once per
// process, when it is first used), valid tells a workspace's name.
func NewCatalog(dirs []string, runner func(dir string) Runner, open func(ctx context.Context, dir string, r Runner) error, valid func(string) bool) *Catalog {
	c := &Catalog{free: make(chan *catalogDir, len(dirs)), runner: runner, open: open, valid: valid}
	for _, d := range dirs {
		c.free <- &catalogDir{path: d}
	}
	return c
}

// take waits for a free directory, initialized, and returns a runner in
// it; the caller gives it back with c.give.
func (c *Catalog) take(ctx context.Context) (*catalogDir, Runner, error) {
	var d *catalogDir
	select {
	case d = <-c.free:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("catalog: %w", ctx.Err())
	}
	r := c.runner(d.path)
	if d.inited {
		return d, r, nil
	}
	// A directory an earlier process left selects the entry it wrote
	// last, and init refuses a selected workspace that is gone.
	err := os.Remove(workspaceFile(d.path))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = c.open(ctx, d.path, r)
	}
	if err != nil {
		c.give(d)
		return nil, nil, fmt.Errorf("catalog: %w", err)
	}
	d.inited = true
	return d, r, nil
}

func (c *Catalog) give(d *catalogDir) { c.free <- d }

// holds reports whether the catalog holds an entry for name, as this
// process knows it (listed on the first call).
func (c *Catalog) holds(ctx context.Context, name string) (bool, error) {
	c.mu.Lock()
	listed := c.known != nil
	c.mu.Unlock()
	if !listed {
		if _, err := c.List(ctx); err != nil {
			return false, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[name], nil
}

// remember records that the catalog holds (or no longer holds) name.
func (c *Catalog) remember(name string, held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil {
		return // the first listing will tell
	}
	if held {
		c.known[name] = true
	} else {
		delete(c.known, name)
	}
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
	held, err := c.holds(ctx, name)
	if err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	d, r, err := c.take(ctx)
	if err != nil {
		return false, err
	}
	defer c.give(d)
	if err := chooseWorkspace(d.path, name); err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	if held && same != nil {
		if old, err := pullEntry(ctx, r); err == nil && same(old) {
			return false, nil
		}
	}
	if err := push(ctx, r, d.path, doc); err != nil {
		return false, fmt.Errorf("catalog %s: %w", name, err)
	}
	c.remember(name, true)
	return true, nil
}

// push writes doc as the selected workspace's state (the backend creates
// it when it has none).
func push(ctx context.Context, r Runner, dir string, doc []byte) error {
	f, err := os.CreateTemp(dir, "entry-*.tfstate")
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
	held, err := c.holds(ctx, name)
	if err != nil || !held {
		return err
	}
	d, r, err := c.take(ctx)
	if err != nil {
		return err
	}
	defer c.give(d)
	if err := chooseWorkspace(d.path, "default"); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceDelete(ctx, name, tfexec.Force(true), tfexec.LockTimeout("30s"))
	}); err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	c.remember(name, false)
	return nil
}

// List lists the names of the workspaces the catalog holds an entry for,
// read from the state backend.
func (c *Catalog) List(ctx context.Context) ([]string, error) {
	d, r, err := c.take(ctx)
	if err != nil {
		return nil, err
	}
	defer c.give(d)
	names, err := listWorkspaces(ctx, r, c.valid)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	known := make(map[string]bool, len(names))
	for _, n := range names {
		known[n] = true
	}
	c.mu.Lock()
	c.known = known
	c.mu.Unlock()
	return names, nil
}

// Get reads name's entry from the state backend.
func (c *Catalog) Get(ctx context.Context, name string) ([]byte, error) {
	d, r, err := c.take(ctx)
	if err != nil {
		return nil, err
	}
	defer c.give(d)
	// Selected by tofu, which refuses a workspace that does not exist
	// (a backend would create its state on a read).
	if err := selectWorkspace(ctx, r, name); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	entry, err := pullEntry(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	return entry, nil
}

// chooseWorkspace makes name dir's selected Terraform workspace by
// writing the workspace file of dir's tofu data directory, as `tofu
// workspace select` does once it has listed the workspaces to check that
// name is one (which a write does not need: the backend creates a missing
// workspace's state on its first push).
func chooseWorkspace(dir, name string) error {
	return os.WriteFile(workspaceFile(dir), []byte(name), 0o644)
}

// workspaceFile is where tofu keeps dir's selected Terraform workspace.
func workspaceFile(dir string) string { return filepath.Join(dir, ".terraform", "environment") }

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
