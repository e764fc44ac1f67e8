// The lbhost_vip_allocation resource: a VIP's address and VRRP virtual
// router id, decided across every LB host that answers and kept in state.

package tfprovider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
)

type allocationResource struct{ connected }

func newAllocationResource() resource.Resource { return &allocationResource{} }

var (
	_ resource.ResourceWithConfigure   = (*allocationResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*allocationResource)(nil)
	_ resource.ResourceWithImportState = (*allocationResource)(nil)
)

type allocationModel struct {
	ID              types.String `tfsdk:"id"`
	Owner           types.String `tfsdk:"owner"`
	Pool            types.String `tfsdk:"pool"`
	Address         types.String `tfsdk:"address"`
	Share           types.String `tfsdk:"share"`
	Interface       types.String `tfsdk:"vrrp_interface"`
	VRIDRange       types.String `tfsdk:"virtual_router_id_range"`
	VirtualRouterID types.Int64  `tfsdk:"virtual_router_id"`
}

func (r *allocationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vip_allocation"
}

func (r *allocationResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A VIP's address and VRRP virtual router id for a group of LB hosts (a provider with `hosts`), decided at create " +
			"under the lock of every host that answers, from all their claims and VRRP ids, and recorded on each (the address's claim, " +
			"the id's reservation `vrrp-ids/<interface>.<id>`). No one host holds the allocation: any host may be down, reinstalled or " +
			"replaced; the values live in state and never change (Read reads nothing). An owner that already holds an address and id " +
			"on a host that answers (an `lbhost_vip` of an earlier layout) keeps them, known at plan. Give both to an `lbhost_vip` on every host. " +
			"Import adopts a hand-made keepalived VRRP instance, read on every host (each must answer and have it alike: address, virtual router id, interface): " +
			"`keepalived:<instance>,<owner>,<pool>`; its address and id become the allocation's, and a plan asking another `address` of it fails. " +
			"Create fails when no host answers; destroy drops the claim and reservation on the hosts that answer.",
		Attributes: claimSchema{
			ownerValidators:   []validator.String{ownerCheck},
			pool:              "IPv4 CIDR (/30 or larger) or IPv6 CIDR (/126 or larger) the address comes from.",
			poolValidators:    []validator.String{cidrCheck},
			address:           "The address: requested, or allocated at apply time (known after apply on create, unless the owner already holds one).",
			addressValidators: []validator.String{ipCheck},
			share:             "A share token, as `lbhost_vip`'s: owners with the same token get one address and one virtual router id.",
		}.attributes(map[string]schema.Attribute{
			"vrrp_interface": schema.StringAttribute{Required: true, Description: "The interface of the VRRP instances: ids are unique per interface.",
				Validators: []validator.String{ifaceCheck}, PlanModifiers: replace},
			"virtual_router_id_range": schema.StringAttribute{Required: true,
				Description: "`<first>-<last>`: the ids the virtual router id is allocated from (the owner's existing id is kept).",
				Validators:  []validator.String{stringCheck{desc: "<first>-<last>, from 1 to 255", ok: func(s string) bool { _, _, ok := host.ParseVRIDRange(s); return ok }}}},
			"virtual_router_id": schema.Int64Attribute{Computed: true, Description: "The allocated VRRP virtual router id.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
		}),
	}
}

// request is the model as Allocate's request.
func (m allocationModel) request() (host.Request, error) {
	pool, err := parsePool(m.Pool)
	if err != nil {
		return host.Request{}, err
	}
	first, last, ok := host.ParseVRIDRange(m.VRIDRange.ValueString())
	if !ok {
		return host.Request{}, &host.FieldError{Field: "virtual_router_id_range", Msg: fmt.Sprintf("%q must be <first>-<last> from 1 to 255", m.VRIDRange.ValueString())}
	}
	return host.Request{Owner: m.Owner.ValueString(), Share: m.Share.ValueString(), Pool: pool, Address: requested(m.Address),
		Interface: m.Interface.ValueString(), VRIDRange: [2]int{first, last}}, nil
}

func (m allocationModel) summary() string { return "lbhost_vip_allocation " + m.Owner.ValueString() }

// ModifyPlan, at create: an owner that already holds an address and id on
// a host that answers keeps them, known at plan (an upgrade from the
// layout where one host allocated replaces nothing).
func (r *allocationResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !req.Plan.Raw.IsNull() && !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(checkAdoptedAddress(ctx, req, resp)...)
		return
	}
	if req.Plan.Raw.IsNull() || r.c == nil || r.c.unknown {
		return
	}
	var m allocationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Owner.IsUnknown() || m.Pool.IsUnknown() || m.Share.IsUnknown() || m.Interface.IsUnknown() ||
		m.VRIDRange.IsUnknown() {
		return
	}
	rq, err := m.request()
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	up, _, err := r.c.reach(ctx)
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	a, ok, err := host.FindAllocation(ctx, up, rq)
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	if !ok && rq.Address != "" {
		// A requested address is known at plan, so each host's VIP
		// checks it (and its interface) before anything is applied.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("address"), types.StringValue(rq.Address))...)
		return
	}
	if !ok || (rq.Address != "" && a.Address != rq.Address) {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("address"), types.StringValue(a.Address))...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("virtual_router_id"), types.Int64Value(int64(a.VirtualRouterID)))...)
}

func (r *allocationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m allocationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rq, err := m.request()
	if err == nil && !m.Address.IsNull() && !m.Address.IsUnknown() {
		rq.Address = m.Address.ValueString() // kept from plan: the owner's existing address
	}
	var up []*host.Host
	var down []string
	if err == nil {
		up, down, err = r.c.reach(ctx)
	}
	var a host.Allocation
	if err == nil {
		a, err = host.Allocate(ctx, up, rq)
	}
	if err != nil {
		if err == host.ErrNoHostReachable {
			err = fmt.Errorf("%w (unreachable: %s)", err, strings.Join(down, ", "))
		}
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	if len(down) > 0 {
		resp.Diagnostics.AddWarning(m.summary()+": allocated without "+strings.Join(down, ", "),
			"Allocated from the hosts that answer; "+strings.Join(down, ", ")+" get the VIP when they are back.")
	}
	m.ID, m.Address, m.VirtualRouterID = m.Owner, types.StringValue(a.Address), types.Int64Value(int64(a.VirtualRouterID))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps the state: the allocation is tfccm's record, not the hosts'.
func (r *allocationResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

// Update changes only the range (kept ids stay).
func (r *allocationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m allocationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *allocationResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m allocationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rq, err := m.request()
	var up []*host.Host
	var down []string
	if err == nil {
		up, down, err = r.c.reach(ctx)
	}
	a := host.Allocation{Address: m.Address.ValueString(), VirtualRouterID: int(m.VirtualRouterID.ValueInt64())}
	for i := 0; err == nil && i < len(up); i++ {
		err = up[i].Deallocate(ctx, rq, a)
	}
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	if len(down) > 0 {
		resp.Diagnostics.AddWarning(m.summary()+": released without "+strings.Join(down, ", "),
			"Not released on "+strings.Join(down, ", ")+" (unreachable): its claim there stays until the host is wiped.")
	}
}
