package fleet

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/gate"
	"github.com/tfccm/tfccm/gate/policy"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Options are how the targets are planned.
type Options struct {
	workspace.PreviewOptions
	// Parallelism bounds concurrent plans (at least 1).
	Parallelism int
	// ScratchDir holds one scratch directory per workspace, removed after.
	ScratchDir string
	// Gate judges each plan as the live gate would (policy rules, then
	// change windows); its findings and hold go into the row (nil: none).
	Gate *gate.Gate
}

// Plan plans every target read-only and returns the report, rows in the
// targets' order (a retired workspace the catalog does not hold has
// none).
func Plan(ctx context.Context, o Options, targets []Target) *Report {
	rows := make([]Row, len(targets))
	shown := make([]bool, len(targets))
	sem := make(chan struct{}, max(o.Parallelism, 1))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var err error
			rows[i], err = planOne(ctx, o, t)
			shown[i] = err == nil
		}()
	}
	wg.Wait()
	rep := &Report{Rows: []Row{}}
	for i, r := range rows {
		if shown[i] {
			rep.Rows = append(rep.Rows, r)
		}
	}
	return rep
}

// planOne is t's row; errNotCatalogued when it has none.
func planOne(ctx context.Context, o Options, t Target) (Row, error) {
	r := Row{Target: t.ID(), Namespace: t.Namespace, Name: t.Name}
	if t.Err != nil {
		r.Error = o.Scrub.Scrub(t.Err.Error())
		return r, nil
	}
	if t.Retire != nil {
		return planRetired(ctx, o, t)
	}
	r.Workspace, r.Module = t.Spec.Name, t.Spec.Module
	dir := filepath.Join(o.ScratchDir, t.Spec.Name)
	defer os.RemoveAll(dir)
	p, err := workspace.PreviewPlan(ctx, o.PreviewOptions, t.Spec, dir)
	if err != nil {
		r.Error = o.Scrub.Scrub(err.Error())
		return r, nil
	}
	r.Add, r.Change, r.Destroy, r.Replaced, r.New = p.Add, p.Change, p.Remove, p.Replaced, p.NoState
	r.Summary = p.Summary
	r.Import, r.Imported = p.Import, p.Imported
	if p.Refused != "" {
		r.Findings = append(r.Findings, policy.Finding{Rule: "adoption", Action: config.PolicyDeny, Message: p.Refused})
	}
	if p.Add+p.Change+p.Remove+p.Import > 0 {
		kind := templates.KindLoadBalancer
		switch {
		case t.Routes:
			kind = templates.KindRoutes
		case t.Peering:
			kind = templates.KindPeering
		}
		v := o.Gate.Judge(gate.Input{Plan: p.Document, Workspace: t.Spec.Name, Kind: string(kind), Create: p.NoState, Imports: p.Import})
		r.Findings, r.Held = append(r.Findings, v.Findings...), v.Hold
	}
	return r, nil
}
