// What each load balancer's last apply announced, for the take-over's
// one-way rule (takeover.go): read from the workspace's last applied
// files in the work dir, or, when the work dir has none (a new pod: the
// chart's work dir is an emptyDir), from the state backend's catalog.

package lbcontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// appliedSource is where what was applied is read: the engine.
type appliedSource interface {
	Status(name string) workspace.Status
	Dir(name string) string
	Catalogued(ctx context.Context) ([]string, error)
	CatalogEntry(ctx context.Context, name string) (workspace.CatalogEntry, error)
}

// appliedAnnounce recalls, by workspace, whether its last apply announced
// its addresses (templates.Announced). A workspace once recalled
// announcing stays so in this process (the rule is one-way); any other
// answer is kept until the workspace's applied hash changes.
type appliedAnnounce struct {
	source appliedSource

	mu       sync.Mutex
	recalled map[string]recalledAnnounce
	catalog  map[string]bool // the catalog's workspaces, listed once (nil: not yet)
}

type recalledAnnounce struct {
	hash      string // the applied hash it was read for ("" none applied in this work dir)
	announced bool
}

// announced reports whether workspace ws was last applied announcing. A
// workspace never applied (or destroyed) did not; an applied one whose
// files cannot be read is an error: nothing may be decided without it.
func (a *appliedAnnounce) announced(ws string) (bool, error) {
	if a == nil || a.source == nil {
		return false, nil
	}
	st := a.source.Status(ws)
	if st.Phase == workspace.PhaseDestroyed {
		a.forget(ws)
		return false, nil
	}
	a.mu.Lock()
	r, ok := a.recalled[ws]
	a.mu.Unlock()
	if ok && (r.announced || r.hash == st.AppliedHash) {
		return r.announced, nil
	}
	announced, err := a.read(ws, st)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	if a.recalled == nil {
		a.recalled = map[string]recalledAnnounce{}
	}
	if r := a.recalled[ws]; !r.announced {
		a.recalled[ws] = recalledAnnounce{hash: st.AppliedHash, announced: announced}
	}
	announced = a.recalled[ws].announced
	a.mu.Unlock()
	return announced, nil
}

// read reads ws's last applied files: from the work dir when this work
// dir applied it, else from the catalog.
func (a *appliedAnnounce) read(ws string, st workspace.Status) (bool, error) {
	if st.AppliedHash != "" {
		spec, err := workspace.LastApplied(a.source.Dir(ws))
		if err == nil {
			announced, err := templates.Announced(spec.Files)
			if err != nil {
				return false, fmt.Errorf("load balancer %s: read its last applied inputs: %w", ws, err)
			}
			return announced, nil
		}
		if !errors.Is(err, workspace.ErrNotFound) {
			return false, fmt.Errorf("load balancer %s: read its last applied inputs: %w", ws, err)
		}
	}
	return a.fromCatalog(ws)
}

// fromCatalog reads ws's entry in the state backend's catalog: none (no
// catalog, or ws not in it) means never applied.
func (a *appliedAnnounce) fromCatalog(ws string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), workspace.CatalogReadTimeout)
	defer cancel()
	a.mu.Lock()
	listed := a.catalog
	a.mu.Unlock()
	if listed == nil {
		names, err := a.source.Catalogued(ctx)
		switch {
		case errors.Is(err, workspace.ErrNoCatalog):
		case err != nil:
			return false, fmt.Errorf("load balancer %s: list the state backend's catalog for what it last applied: %w", ws, err)
		}
		listed = make(map[string]bool, len(names))
		for _, n := range names {
			listed[n] = true
		}
		a.mu.Lock()
		a.catalog = listed
		a.mu.Unlock()
	}
	if !listed[ws] {
		return false, nil
	}
	entry, err := a.source.CatalogEntry(ctx, ws)
	if err != nil {
		return false, fmt.Errorf("load balancer %s: read what it last applied from the state backend's catalog: %w", ws, err)
	}
	announced, err := templates.Announced(entry.Files)
	if err != nil {
		return false, fmt.Errorf("load balancer %s: read its last applied inputs from the state backend's catalog: %w", ws, err)
	}
	return announced, nil
}

// forget drops what is recalled of ws (destroyed).
func (a *appliedAnnounce) forget(ws string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	delete(a.recalled, ws)
	delete(a.catalog, ws)
	a.mu.Unlock()
}
