// The resources kept on the host as one object under their name
// (lbhost_frontend, lbhost_l4_frontend): what each declares (namedObject),
// and the Create, Update, Read, Delete and ImportState they
// share (namedResource).

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"

	"github.com/tfccm/tfccm/lbhost/host"
)

// namedObject declares one such resource: its model M and the host's type
// T of the object, how one becomes the other, and the host's operations.
type namedObject[M, T any] struct {
	typeName string // e.g. lbhost_frontend, the start of every diagnostic's summary
	what     string // names the object when an import finds none, e.g. "load balancer"
	name     func(M) string
	withID   func(*M) // sets the id from the name
	toHost   func(M) T
	fromHost func(T) M
	// same compares what two objects put on the host.
	same func(a, b T) bool
	// inert is the prior state as a drifted object reads: in effect nothing.
	inert func(M) M
	// keepEmpty gives m empty lists where the prior state had them.
	keepEmpty func(prior M, m *M)
	apply     func(*host.Host, context.Context, T) error
	read      func(*host.Host, context.Context, string) (*T, error)
	remove    func(*host.Host, context.Context, string) error
}

// namedResource is such a resource: its connection and its declaration.
type namedResource[M, T any] struct {
	connected
	obj namedObject[M, T]
}

func (r *namedResource[M, T]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.applyPlan(ctx, req.Plan, &resp.State, &resp.Diagnostics)
}

func (r *namedResource[M, T]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.applyPlan(ctx, req.Plan, &resp.State, &resp.Diagnostics)
}

// applyPlan writes the planned object to the host (Create and Update
// alike: the host's write is idempotent) and records it in state; after a
// partial failure the object is on the host, so it is recorded too and the
// next apply resumes.
func (r *namedResource[M, T]) applyPlan(ctx context.Context, plan tfsdk.Plan, state *tfsdk.State, diags *diag.Diagnostics) {
	o := r.obj
	var m M
	diags.Append(plan.Get(ctx, &m)...)
	if diags.HasError() {
		return
	}
	o.withID(&m)
	h, err := r.c.host(ctx)
	if err == nil {
		err = o.apply(h, ctx, o.toHost(m))
	}
	if err != nil {
		addError(diags, o.typeName+" "+o.name(m), err)
		if host.IsPartial(err) {
			diags.Append(state.Set(ctx, &m)...)
		}
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}

// Read is readHosted's rule, and the prior state kept exactly (nulls,
// empty lists) while the host has the same object.
func (r *namedResource[M, T]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	o := r.obj
	prior, ok := readPrior[M](ctx, req, resp)
	if !ok {
		return
	}
	got := readHosted(ctx, r.c, resp, o.typeName+" "+o.name(prior), func(h *host.Host) (*T, error) {
		return o.read(h, ctx, o.name(prior))
	}, func() diag.Diagnostics {
		inert := o.inert(prior)
		return resp.State.Set(ctx, &inert)
	})
	if got == nil {
		return
	}
	if o.same(*got, o.toHost(prior)) {
		return // keep the prior state exactly (nulls, empty lists)
	}
	m := o.fromHost(*got)
	o.keepEmpty(prior, &m)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete removes the object of the state from the host.
func (r *namedResource[M, T]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	o := r.obj
	deleteHosted(ctx, r.c, req, resp, func(m M) string { return o.typeName + " " + o.name(m) },
		func(h *host.Host, m M) error { return o.remove(h, ctx, o.name(m)) })
}

// ImportState takes the name as the id.
func (r *namedResource[M, T]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	o := r.obj
	importHosted(ctx, r.c, resp, "import "+o.typeName, o.what, req.ID,
		func(h *host.Host) (*T, error) { return o.read(h, ctx, req.ID) }, o.fromHost)
}

// deleteHosted is the Delete of every resource whose object is on the
// host: the state's model, removed from the host by remove; summary names
// it in an error.
func deleteHosted[M any](ctx context.Context, c *conn, req resource.DeleteRequest, resp *resource.DeleteResponse, summary func(M) string, remove func(*host.Host, M) error) {
	var m M
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := c.host(ctx)
	if err == nil {
		err = remove(h, m)
	}
	if err != nil {
		addError(&resp.Diagnostics, summary(m), err)
	}
}

// emptyLike makes a nil list empty where the prior state had it empty (a
// list set to [] stays [], not null).
func emptyLike[E any](list *[]E, prior []E) {
	if *list == nil && prior != nil {
		*list = []E{}
	}
}

// nilIfEmpty makes an empty list nil, so null and empty compare alike.
func nilIfEmpty[E any](list []E) []E {
	if len(list) == 0 {
		return nil
	}
	return list
}
