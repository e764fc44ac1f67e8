// The Read and ImportState rules of every resource whose object is on the
// host.

package tfprovider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/tfccm/tfccm/lbhost/host"
)

// Read and ImportState of the resources whose object is on the host,
// shared.

// readHosted is the Read shared by the resources whose object is on the
// host (lbhost_frontend, lbhost_l4_frontend, lbhost_vip,
// lbhost_routed_vip), and its one rule for what a read of the host means:
//
//   - the object as the host has it (read returns it): returned;
//   - really gone (read returns nil and no error: nothing of the object is
//     left on the host): removed from state, so the next apply creates it;
//   - drifted (a *host.Drift or *host.L4Drift: the object, or part of it,
//     is on the host but not in effect): kept in state as inert sets it,
//     in effect nothing, with a warning, so the next apply writes it again
//     and a destroy still removes it (removed from state, a destroy would
//     leave it on the host);
//   - unreadable (any other error, e.g. a file the host could not read):
//     an error, the state unchanged;
//   - the host unreachable: the prior state kept, with a warning.
//
// It returns the object, or nil when Read is done.
func readHosted[C any](ctx context.Context, c *conn, resp *resource.ReadResponse, summary string, read func(*host.Host) (*C, error), inert func() diag.Diagnostics) *C {
	h, err := c.host(ctx)
	if keptUnreachable(&resp.Diagnostics, summary, err) {
		return nil
	}
	var got *C
	if err == nil {
		got, err = read(h)
	}
	var drift *host.Drift
	var l4drift *host.L4Drift
	switch {
	case errors.As(err, &drift):
		resp.Diagnostics.AddWarning(summary+" changed on the host", drift.Error()+"; the next apply writes it again")
		resp.Diagnostics.Append(inert()...)
	case errors.As(err, &l4drift):
		resp.Diagnostics.AddWarning(summary+" is not in effect on the host", l4drift.Error()+"; the next apply writes it again")
		resp.Diagnostics.Append(inert()...)
	case err != nil:
		addError(&resp.Diagnostics, summary, err)
	case got != nil:
		return got
	default:
		resp.State.RemoveResource(ctx)
	}
	return nil
}

// importHosted is the ImportState of those resources: the object named id
// as the host has it, as the resource's model; what names the object in
// the error when the host has none.
func importHosted[C, M any](ctx context.Context, c *conn, resp *resource.ImportStateResponse, summary, what, id string, read func(*host.Host) (*C, error), model func(C) M) {
	h, err := c.host(ctx)
	var got *C
	if err == nil {
		got, err = read(h)
	}
	if err != nil {
		addError(&resp.Diagnostics, summary+" "+id, err)
		return
	}
	if got == nil {
		resp.Diagnostics.AddError(summary+" "+id, fmt.Sprintf("no %s %q on %s", what, id, h.T))
		return
	}
	m := model(*got)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
