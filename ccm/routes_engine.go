package ccm

import (
	"context"
	"fmt"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// What the Routes facet needs of the engine, the renderer and review mode.

// routesEngine is what the Routes facet needs of the workspace engine.
type routesEngine interface {
	Apply(spec workspace.Spec) (workspace.Status, error)
	Status(name string) workspace.Status
	Wait(ctx context.Context, name, hash string) (workspace.Status, error)
}

var _ routesEngine = (*workspace.Engine)(nil)

// routesReview is what the Routes facet needs of review mode.
type routesReview interface {
	// routesResult publishes or withdraws the routes workspace's pending plan.
	RoutesResult(r workspace.Result)
}

// routesRenderer renders the routes workspace from the template set.
type routesRenderer struct {
	cfg    *config.Config
	loader *templates.Loader
}

// RenderRoutes renders the routes workspace for routes.
func (t routesRenderer) RenderRoutes(routes []templates.Route) (*workspace.Spec, error) {
	return t.loader.Set().RenderRoutes(t.cfg, routes)
}

// engineRoutes is the routes facet's workspace: render the desired set,
// submit it and wait for the outcome.
type engineRoutes struct {
	engine routesEngine
	render routesRenderer
}

func (e engineRoutes) status() workspace.Status {
	return e.engine.Status(templates.RoutesWorkspaceName)
}

func (e engineRoutes) apply(ctx context.Context, desired []templates.Route) error {
	ws, err := e.render.RenderRoutes(desired)
	if err != nil {
		return fmt.Errorf("render routes: %w", err)
	}
	if _, err := e.engine.Apply(*ws); err != nil {
		return fmt.Errorf("submit routes: %w", err)
	}
	if _, err := e.engine.Wait(ctx, ws.Name, ws.Hash); err != nil {
		return fmt.Errorf("apply routes: %w", err)
	}
	return nil
}
