// The resources kept on the host as one object under their name
// (lbhost_frontend, lbhost_l4_frontend): what each declares (namedObject),
// the attributes they have alike (namedFields), and the Create, Update,
// Read, Delete and ImportState they share (namedResource).

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// namedObject declares one such resource: its model M and the host's type
// T of the object, how one becomes the other, and the host's operations.
type namedObject[M, T any] struct {
	typeName string                // e.g. lbhost_frontend, the start of every diagnostic's summary
	what     string                // names the object when an import finds none, e.g. "load balancer"
	shared   func(*M) *namedFields // the attributes every such resource has
	noPorts  func(*M)              // empties the ports: a drifted object serves none
	toHost   func(M) T
	fromHost func(T) M
	// same compares what two objects put on the host.
	same   func(a, b T) bool
	apply  func(*host.Host, context.Context, T) error
	read   func(*host.Host, context.Context, string) (*T, error)
	remove func(*host.Host, context.Context, string) error
}

// namedFields are the attributes every such resource has, embedded in
// its model, so that their rules are said once: the name is the id;
// source_ranges and backends set to [] stay [].
type namedFields struct {
	ID              types.String   `tfsdk:"id"`
	Name            string         `tfsdk:"name"`
	Address         string         `tfsdk:"address"`
	Backends        []backendModel `tfsdk:"backends"`
	SourceRanges    []string       `tfsdk:"source_ranges"`
	SessionAffinity string         `tfsdk:"session_affinity"`
}

// sharedFields is the namedObject's access to a model's namedFields.
func (f *namedFields) sharedFields() *namedFields { return f }

// name is the name of the object m declares.
func (o namedObject[M, T]) name(m M) string { return o.shared(&m).Name }

// withID sets the id of m from its name.
func (o namedObject[M, T]) withID(m *M) {
	f := o.shared(m)
	f.ID = types.StringValue(f.Name)
}

// inert is the prior state as a drifted object reads: in effect nothing.
func (o namedObject[M, T]) inert(prior M) M {
	o.noPorts(&prior)
	return prior
}

// keepEmpty gives m empty lists where the prior state had them.
func (o namedObject[M, T]) keepEmpty(prior M, m *M) {
	p, f := o.shared(&prior), o.shared(m)
	emptyLike(&f.SourceRanges, p.SourceRanges)
	emptyLike(&f.Backends, p.Backends)
}

// resource is the resource o declares (its connection set by Configure).
func (o namedObject[M, T]) resource() namedResource[M, T] { return namedResource[M, T]{obj: o} }

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
	if pendingUnreachable(diags, o.typeName+" "+o.name(m), err) {
		diags.Append(state.Set(ctx, &m)...)
		return
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
	if transport.IsUnreachable(err) && c.cfg.ForgetUnreachable.ValueBool() {
		resp.Diagnostics.AddWarning(summary(m)+": host unreachable, forgotten",
			err.Error()+"; the provider's forget_unreachable is set (a retired host): removed from state, not from the host")
		return
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
