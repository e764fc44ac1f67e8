package tfprovider

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
)

type vipResource struct{ c *conn }

func newVIPResource() resource.Resource { return &vipResource{} }

type vipModel struct {
	ID        types.String `tfsdk:"id"`
	Owner     types.String `tfsdk:"owner"`
	Pool      types.String `tfsdk:"pool"`
	Address   types.String `tfsdk:"address"`
	Interface types.String `tfsdk:"interface"`
}

func (r *vipResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vip"
}

func (r *vipResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A virtual IP claimed from a pool on the host and configured as a /32 on `interface`. " +
			"Unless `address` is set, the address is allocated at apply time by the provider under the host's lock, so concurrent " +
			"applies never get the same address; a requested `address` is checked against the pool and its current owner at plan " +
			"time and again under the lock. Claims are files `claims/<address>` holding the owner. Read reports a removed claim or " +
			"address as gone, so the next apply restores it. Import with `<owner>,<pool>[,<interface>]`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The owner.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"owner": schema.StringAttribute{Required: true, Description: "Who holds the claim (e.g. `<cluster>_<load balancer>`).",
				Validators: []validator.String{ownerCheck}, PlanModifiers: replace},
			"pool": schema.StringAttribute{Required: true, Description: "IPv4 CIDR the address comes from.",
				Validators: []validator.String{cidrCheck}, PlanModifiers: replace},
			"address": schema.StringAttribute{Optional: true, Computed: true,
				Description:   "The address: requested, or allocated at apply time (known after apply on create).",
				Validators:    []validator.String{ipv4Check},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()}},
			"interface": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("lo"),
				Description: "Interface the address is added to. Default `lo`.",
				Validators:  []validator.String{ifaceCheck}, PlanModifiers: replace},
		},
	}
}

func (r *vipResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := configureConn(req, resp); c != nil {
		r.c = c
	}
}

func (m vipModel) vip() (host.VIP, error) {
	pool, err := netip.ParsePrefix(m.Pool.ValueString())
	if err != nil {
		return host.VIP{}, &host.FieldError{Field: "pool", Msg: fmt.Sprintf("%q is not a CIDR", m.Pool.ValueString())}
	}
	v := host.VIP{Owner: m.Owner.ValueString(), Pool: pool, Interface: m.Interface.ValueString()}
	if !m.Address.IsNull() && !m.Address.IsUnknown() {
		v.Address = m.Address.ValueString()
	}
	return v, nil
}

// ModifyPlan checks a requested address at plan time: inside the pool and
// not owned by anyone else on the host.
func (r *vipResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.c == nil {
		return
	}
	var cfg vipModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	var plan vipModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || cfg.Address.IsNull() || cfg.Address.IsUnknown() ||
		plan.Owner.IsUnknown() || plan.Pool.IsUnknown() || plan.Interface.IsUnknown() {
		return
	}
	v, err := plan.vip()
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip", err)
		return
	}
	if err := host.CheckInPool(v.Pool, v.Address); err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+v.Owner, err)
		return
	}
	h, err := r.c.host(ctx)
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+v.Owner, err)
		return
	}
	if err := h.CheckRequest(ctx, v); err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+v.Owner, err)
	}
}

func (r *vipResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m vipModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	v, err := m.vip()
	var h *host.Host
	if err == nil {
		h, err = r.c.host(ctx)
	}
	var addr string
	if err == nil {
		addr, err = h.ClaimVIP(ctx, v)
	}
	if addr != "" {
		// Claimed (even if configuring the address failed): record it so
		// the next apply keeps this address instead of claiming another.
		m.ID, m.Address = m.Owner, types.StringValue(addr)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+m.Owner.ValueString(), err)
	}
}

func (r *vipResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m vipModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := r.c.host(ctx)
	var ok bool
	if err == nil {
		ok, err = h.VIPPresent(ctx, m.Owner.ValueString(), m.Address.ValueString(), m.Interface.ValueString())
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+m.Owner.ValueString(), err)
		return
	}
	if !ok {
		resp.State.RemoveResource(ctx)
	}
}

// Update never runs: every argument requires replacement.
func (r *vipResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m vipModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *vipResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m vipModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := r.c.host(ctx)
	if err == nil {
		err = h.ReleaseVIP(ctx, m.Owner.ValueString(), m.Address.ValueString(), m.Interface.ValueString())
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+m.Owner.ValueString(), err)
	}
}

// ImportState takes "<owner>,<pool>[,<interface>]".
func (r *vipResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	parts := strings.Split(req.ID, ",")
	if len(parts) < 2 || len(parts) > 3 {
		resp.Diagnostics.AddError("import lbhost_vip", fmt.Sprintf("id %q: want <owner>,<pool>[,<interface>]", req.ID))
		return
	}
	iface := "lo"
	if len(parts) == 3 {
		iface = parts[2]
	}
	h, err := r.c.host(ctx)
	var addr string
	if err == nil {
		addr, err = h.FindVIP(ctx, parts[0])
	}
	if err != nil {
		addError(&resp.Diagnostics, "import lbhost_vip "+parts[0], err)
		return
	}
	if addr == "" {
		resp.Diagnostics.AddError("import lbhost_vip "+parts[0], fmt.Sprintf("%s holds no claim on %s", parts[0], h.T))
		return
	}
	m := vipModel{ID: types.StringValue(parts[0]), Owner: types.StringValue(parts[0]), Pool: types.StringValue(parts[1]),
		Address: types.StringValue(addr), Interface: types.StringValue(iface)}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
