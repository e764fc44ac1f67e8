package workspace

// The engine's side of the catalog (package backends keeps it in the
// state backend): what an entry says — the last applied configuration of
// every workspace that has an owner (a load balancer's Service) — so that
// a controller whose work dir is empty (a new pod: the chart's work dir is
// an emptyDir) can still find a workspace whose owner is gone and destroy
// it. An entry holds the rendered files (which never hold secrets: secret
// backend settings and credentials reach tofu through its environment)
// and the owner.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/tofu"
)

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

// catalog is the engine's catalog: package backends' store, its runners
// made from the engine's tofu setup.
type catalog struct {
	store *backends.Catalog
}

// newCatalog is the catalog of spec (Options.Catalog) under the work dir,
// in n directories: one per unit of the engine's parallelism, so that
// runs finishing at once write their entries at once.
func newCatalog(t *tofu.Setup, spec *Spec, n int) *catalog {
	runner := func(dir string) *runner {
		r := newRunner(t, dir, spec, t.Scrub.With(mapValues(spec.BackendConfig)))
		r.Spec, r.Unlocked = nil, true // no init again, no stale-lock release
		return r
	}
	open := func(ctx context.Context, dir string, _ backends.Runner) error {
		if err := spec.WriteDir(dir); err != nil {
			return err
		}
		return runner(dir).Init(ctx, spec.dirSpec(), false)
	}
	dirs := backends.CatalogDirs(t.WorkDir, n)
	return &catalog{store: backends.NewCatalog(dirs, func(dir string) backends.Runner { return runner(dir) }, open, validName)}
}

// catalogPut records spec, just applied, in the catalog unless its hash
// is already there: rec.Catalogued says so, or, when this work dir never
// recorded it (a new pod, a new leader), the entry in the backend says
// so; either way nothing is written again. A failure is logged: the apply
// stands, and the next run of the workspace (a drift check, a change)
// tries again. A nil catalog records nothing.
func (c *catalog) catalogPut(ctx context.Context, spec *Spec, rec *record) {
	if c == nil || spec.Owner == nil || rec.Catalogued == spec.Hash {
		return
	}
	entry := CatalogEntry{Name: spec.Name, Owner: *spec.Owner, Module: spec.Module, Hash: spec.Hash, AppliedAt: rec.AppliedAt.UTC(), Files: spec.Files, Modes: spec.Modes}
	value, err := json.Marshal(entry)
	if err != nil {
		klog.ErrorS(err, "Record the applied configuration in the state backend's catalog", "workspace", spec.Name)
		return
	}
	var same func([]byte) bool
	if rec.Catalogued == "" {
		same = func(old []byte) bool {
			var e CatalogEntry
			return json.Unmarshal(old, &e) == nil && e.Name == spec.Name && e.Hash == spec.Hash && e.Owner == *spec.Owner
		}
	}
	if _, err := c.store.Put(ctx, spec.Name, value, same); err != nil {
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
	if err := c.store.Remove(ctx, name); err != nil {
		klog.ErrorS(err, "Remove a destroyed workspace from the state backend's catalog", "workspace", name)
	}
}

// CatalogReadTimeout bounds one read of the catalog by a caller of the
// engine (a listing and an entry).
const CatalogReadTimeout = time.Minute

// ErrNoCatalog is returned by the catalog's readers when the engine keeps
// no catalog (Options.Catalog is nil: the local backend, or one without
// workspaces).
var ErrNoCatalog = errors.New("no catalog: the state backend keeps none")

// Catalogued lists the names of the workspaces the catalog holds an entry
// for, read from the state backend.
func (e *Engine) Catalogued(ctx context.Context) ([]string, error) {
	if e.catalog == nil {
		return nil, ErrNoCatalog
	}
	return e.catalog.store.List(ctx)
}

// CatalogEntry reads workspace name's entry from the state backend.
func (e *Engine) CatalogEntry(ctx context.Context, name string) (CatalogEntry, error) {
	if e.catalog == nil {
		return CatalogEntry{}, ErrNoCatalog
	}
	b, err := e.catalog.store.Get(ctx, name)
	if err != nil {
		return CatalogEntry{}, err
	}
	return decodeCatalogEntry(name, b)
}

// CatalogLookup reads workspace name's entry when the catalog holds one:
// ok is false when it holds none for name, or the engine keeps no
// catalog (the local backend), so a caller asking "was this applied by
// an earlier controller?" gets one answer for both.
func (e *Engine) CatalogLookup(ctx context.Context, name string) (entry CatalogEntry, ok bool, err error) {
	if e.catalog == nil {
		return CatalogEntry{}, false, nil
	}
	return lookupEntry(ctx, e.catalog.store, name)
}

// lookupEntry lists store and reads name's entry when it is listed; ok
// is false when it is not.
func lookupEntry(ctx context.Context, store *backends.Catalog, name string) (CatalogEntry, bool, error) {
	names, err := store.List(ctx)
	if err != nil {
		return CatalogEntry{}, false, err
	}
	if !slices.Contains(names, name) {
		return CatalogEntry{}, false, nil
	}
	b, err := store.Get(ctx, name)
	if err != nil {
		return CatalogEntry{}, false, err
	}
	entry, err := decodeCatalogEntry(name, b)
	if err != nil {
		return CatalogEntry{}, false, err
	}
	return entry, true, nil
}

// decodeCatalogEntry decodes workspace name's entry as the catalog keeps
// it, refusing an entry that names another workspace.
func decodeCatalogEntry(name string, b []byte) (CatalogEntry, error) {
	var entry CatalogEntry
	if err := json.Unmarshal(b, &entry); err != nil {
		return CatalogEntry{}, fmt.Errorf("catalog %s: decode entry: %w", name, err)
	}
	if entry.Name != name {
		return CatalogEntry{}, fmt.Errorf("catalog %s: the entry names workspace %q", name, entry.Name)
	}
	return entry, nil
}
