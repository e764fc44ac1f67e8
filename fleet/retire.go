package fleet

// Retired cluster workspaces: the BGP peering a candidate no longer
// renders (no bgp in load_balancer.settings, or a set without a bgp
// module) but the state backend's catalog holds, applied earlier. The
// controller destroys it, as the catalog keeps it, once no Service of
// the bgp variant is left, and keeps it until then (ccm/peering.go); its
// row previews that destroy read-only against the real state and says
// which of the two the controller will do.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/gate"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Retire is where a workspace the candidate no longer renders was kept
// and who still needs it.
type Retire struct {
	// Catalog is the state backend's catalog (templates.Catalog).
	Catalog *workspace.Spec
	// Backend gives the catalogued workspace the backend tfccm generates
	// for its name with the candidate config (templates.WithBackend).
	Backend func(workspace.Spec) (workspace.Spec, error)
	// Users are the Services ("namespace/name", sorted) whose load
	// balancers announce over the peering: while there is one, the
	// controller keeps it.
	Users []string
}

// retiredPeering is the peering's target when the candidate renders none
// (nil without a catalog: the local backend keeps its states in the
// work dir, which `tfccm plan` does not read). Its users are the
// Services the controller would count (ccm peeringUsers): of type
// LoadBalancer, with the candidate set's bgp variant.
func retiredPeering(cfg *config.Config, set *templates.Set, services []*corev1.Service) *Target {
	t := &Target{Name: templates.PeeringWorkspaceName, Peering: true}
	catalog, err := templates.Catalog(cfg)
	switch {
	case err != nil:
		t.Err = fmt.Errorf("the state backend's catalog: %w", err)
		return t
	case catalog == nil:
		return nil
	}
	r := &Retire{Catalog: catalog, Backend: func(s workspace.Spec) (workspace.Spec, error) { return templates.WithBackend(cfg, s) }}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && set.PeeringServes(svc) {
			r.Users = append(r.Users, svc.Namespace+"/"+svc.Name)
		}
	}
	sort.Strings(r.Users)
	t.Retire = r
	return t
}

// errNotCatalogued: the catalog holds no entry for the retired workspace
// (never applied, or destroyed): there is nothing to show.
var errNotCatalogued = errors.New("not in the state backend's catalog")

// planRetired previews the destroy of t's workspace as the catalog keeps
// it; errNotCatalogued when it keeps none.
func planRetired(ctx context.Context, o Options, t Target) (Row, error) {
	r := Row{Target: t.ID(), Name: t.Name, Workspace: t.Name, Retired: true}
	dir := filepath.Join(o.ScratchDir, t.Name)
	defer os.RemoveAll(dir)
	defer os.RemoveAll(dir + ".catalog")
	entry, ok, err := workspace.PreviewCatalogEntry(ctx, o.PreviewOptions, t.Retire.Catalog, t.Name, dir+".catalog")
	switch {
	case err != nil:
		r.Error = o.Scrub.Scrub(fmt.Sprintf("read its last applied configuration from the state backend's catalog: %v", err))
		return r, nil
	case !ok:
		return r, errNotCatalogued
	}
	spec, err := t.Retire.Backend(entry.Spec())
	if err != nil {
		r.Error = o.Scrub.Scrub(err.Error())
		return r, nil
	}
	r.Module = spec.Module
	po := o.PreviewOptions
	po.Destroy = true
	p, err := workspace.PreviewPlan(ctx, po, &spec, dir)
	if err != nil {
		r.Error = o.Scrub.Scrub(err.Error())
		return r, nil
	}
	r = retiredRow(r, p, t.Retire.Users)
	if !r.Kept && r.Changes() {
		v := o.Gate.Judge(gate.Input{Plan: p.Document, Workspace: spec.Name, Kind: string(templates.KindPeering), Destroy: true})
		r.Findings, r.Held = append(r.Findings, v.Findings...), v.Hold
	}
	return r, nil
}

// retiredRow fills r from the destroy's preview p: destroyed now when no
// Service uses the peering, else kept, its destroy's count only as what
// follows once they are gone (the row claims no destroy the controller
// does not do yet).
func retiredRow(r Row, p *workspace.Preview, users []string) Row {
	if len(users) == 0 {
		r.Destroy, r.Summary = p.Remove, p.Summary
		r.Note = fmt.Sprintf("destroyed: the candidate renders no BGP peering (no %s in load_balancer.settings, or no %s module in the set) and no Service of the %s variant is left",
			templates.PeeringSetting, templates.PeeringDir, templates.PeeringVariant)
		return r
	}
	r.Kept, r.Later = true, p.Remove
	r.Note = fmt.Sprintf("kept: %d Service(s) of the %s variant still announce over it (%s); its destroy (-%d) follows once none is left",
		len(users), templates.PeeringVariant, shortList(users, 5), p.Remove)
	return r
}

// shortList joins the first n of names, then says how many more.
func shortList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
