package ccm

import (
	"context"
	"fmt"
	"sync"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// What the BGP peering facet needs of the engine, the renderer and review
// mode.

// peeringEngine is what the peering facet needs of the workspace engine.
type peeringEngine interface {
	Apply(spec workspace.Spec) (workspace.Status, error)
	Destroy(spec workspace.Spec) (workspace.Status, error)
	Revive(name string) (bool, error)
	Status(name string) workspace.Status
	Written(name string) (workspace.Spec, error)
	Wait(ctx context.Context, name, hash string) (workspace.Status, error)
	CatalogLookup(ctx context.Context, name string) (workspace.CatalogEntry, bool, error)
}

var _ peeringEngine = (*workspace.Engine)(nil)

// clusterReview is what the peering facet needs of review mode: the
// routes workspace's code path, by workspace name.
type clusterReview interface {
	// ClusterResult publishes or withdraws a cluster workspace's pending
	// plan.
	ClusterResult(ws string, r workspace.Result)
}

// enginePeering is the peering facet's workspace: render it from the
// current template set and the cloud config, submit it and wait.
type enginePeering struct {
	engine peeringEngine
	cfg    *config.Config
	loader *templates.Loader

	mu sync.Mutex
	// uncatalogued: the state backend's catalog was read and holds no
	// peering, so this process applied none it does not know of (read
	// once: only the leader, this process, writes it).
	uncatalogued bool
}

func (e *enginePeering) render() (*workspace.Spec, bool, error) {
	return e.loader.Set().RenderPeering(e.cfg)
}

func (e *enginePeering) status() workspace.Status {
	return e.engine.Status(templates.PeeringWorkspaceName)
}

func (e *enginePeering) apply(ctx context.Context, spec *workspace.Spec) error {
	// bgp removed, then added back: the destroyed workspace is applied
	// anew (a destroy still running refuses, and the pass is retried).
	if e.status().Phase == workspace.PhaseDestroyed {
		ok, err := e.engine.Revive(spec.Name)
		if err != nil {
			return fmt.Errorf("apply again after its destroy: %w", err)
		}
		if !ok {
			return fmt.Errorf("apply again: its destroy has not finished")
		}
	}
	if _, err := e.engine.Apply(*spec); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if _, err := e.engine.Wait(ctx, spec.Name, spec.Hash); err != nil {
		return err
	}
	return nil
}

// applied returns the peering as this work dir last wrote it, or, when
// the work dir never applied it, as the state backend's catalog keeps it
// (templates.ClusterOwner makes the engine catalog it). Without a catalog
// (the local backend) the work dir is all there is.
func (e *enginePeering) applied(ctx context.Context) (*workspace.Spec, bool, error) {
	const name = templates.PeeringWorkspaceName
	st := e.status()
	switch {
	case st.Phase == workspace.PhaseDestroyed:
		return nil, false, nil
	case st.AppliedHash != "":
		spec, err := e.engine.Written(name)
		if err != nil {
			return nil, false, fmt.Errorf("read the applied workspace: %w", err)
		}
		return &spec, true, nil
	}
	e.mu.Lock()
	uncatalogued := e.uncatalogued
	e.mu.Unlock()
	if uncatalogued {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, workspace.CatalogReadTimeout)
	defer cancel()
	entry, ok, err := e.engine.CatalogLookup(ctx, name)
	if err != nil {
		return nil, false, fmt.Errorf("read the state backend's catalog for a peering applied by an earlier CCM: %w", err)
	}
	if !ok {
		e.mu.Lock()
		e.uncatalogued = true
		e.mu.Unlock()
		return nil, false, nil
	}
	spec := entry.Spec()
	return &spec, true, nil
}

// destroy destroys spec, as applied (the settings that no longer carry
// bgp cannot render it), with the backend tfccm generates.
func (e *enginePeering) destroy(ctx context.Context, applied *workspace.Spec) error {
	spec, err := templates.WithBackend(e.cfg, *applied)
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	spec.Hash = spec.ContentHash()
	if _, err := e.engine.Destroy(spec); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if _, err := e.engine.Wait(ctx, spec.Name, spec.Hash); err != nil {
		return err
	}
	return nil
}
