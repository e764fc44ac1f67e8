// The lbhost_vip resource, with its VRRP instance.

package tfprovider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/keepalived"
)

type vipResource struct{ connected }

func newVIPResource() resource.Resource { return &vipResource{} }

var (
	_ resource.ResourceWithConfigure      = (*vipResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*vipResource)(nil)
	_ resource.ResourceWithImportState    = (*vipResource)(nil)
	_ resource.ResourceWithValidateConfig = (*vipResource)(nil)
)

type vipModel struct {
	ID        types.String `tfsdk:"id"`
	Owner     types.String `tfsdk:"owner"`
	Pool      types.String `tfsdk:"pool"`
	Address   types.String `tfsdk:"address"`
	Interface types.String `tfsdk:"interface"`
	VRRP      *vrrpModel   `tfsdk:"vrrp"`
	Share     types.String `tfsdk:"share"`
	InEffect  types.Bool   `tfsdk:"in_effect"`
	Standby   types.Bool   `tfsdk:"standby"`
	// KeepalivedInstance: the adopted hand-made instance's name (null
	// for a VIP lbhost created).
	KeepalivedInstance types.String `tfsdk:"keepalived_instance"`
}

type vrrpModel struct {
	Interface       types.String `tfsdk:"interface"`
	VirtualRouterID types.Int64  `tfsdk:"virtual_router_id"`
	VRIDRange       types.String `tfsdk:"virtual_router_id_range"`
	Priority        types.Int64  `tfsdk:"priority"`
	AdvertInt       types.Int64  `tfsdk:"advert_int"`
	NoPreempt       types.Bool   `tfsdk:"nopreempt"`
	SourceAddress   types.String `tfsdk:"source_address"`
	Peers           types.List   `tfsdk:"peers"`
}

func (v *vrrpModel) instance(ctx context.Context) (*keepalived.Instance, diag.Diagnostics) {
	if v == nil {
		return nil, nil
	}
	in := &keepalived.Instance{Interface: v.Interface.ValueString(), VirtualRouterID: int(v.VirtualRouterID.ValueInt64()),
		Priority: int(v.Priority.ValueInt64()), AdvertInt: int(v.AdvertInt.ValueInt64()), NoPreempt: v.NoPreempt.ValueBool(),
		SourceAddress: v.SourceAddress.ValueString()}
	var diags diag.Diagnostics
	if !v.Peers.IsNull() {
		diags = v.Peers.ElementsAs(ctx, &in.Peers, false)
	}
	return in, diags
}

func fromInstance(in keepalived.Instance, prior *vrrpModel) *vrrpModel {
	m := &vrrpModel{Interface: types.StringValue(in.Interface), VirtualRouterID: types.Int64Value(int64(in.VirtualRouterID)),
		Priority: types.Int64Value(int64(in.Priority)), AdvertInt: types.Int64Value(int64(in.AdvertInt)),
		NoPreempt: types.BoolValue(in.NoPreempt), SourceAddress: types.StringNull(), Peers: types.ListNull(types.StringType)}
	if in.SourceAddress != "" {
		m.SourceAddress = types.StringValue(in.SourceAddress)
	}
	if len(in.Peers) > 0 || (prior != nil && !prior.Peers.IsNull()) {
		peers := make([]attr.Value, len(in.Peers))
		for i, p := range in.Peers {
			peers[i] = types.StringValue(p)
		}
		m.Peers = types.ListValueMust(types.StringType, peers)
	}
	return m
}

func (r *vipResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vip"
}

func (r *vipResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A virtual IP claimed from a pool on the host and configured as a /32 (IPv4) or /128 (IPv6, without duplicate address detection) on `interface`. " +
			"Unless `address` is set, the address is allocated at apply time by the provider under the host's lock, so concurrent " +
			"applies never get the same address; a requested `address` is checked against the pool and its current owner at plan " +
			"time and again under the lock. Claims are files `claims/<address>` holding the owner (an IPv6 address with `_` for `:`). Read reports a claim " +
			"without its address, or an address without its claim, as not in effect (`in_effect`): kept in state, so a destroy removes what is left, and " +
			"restored in place by the next apply, with the same address; a VIP of which nothing is left is gone from state. Import with `<owner>,<pool>[,<interface>]`; a VRRP instance of the owner is adopted with it. " +
			"Import with `keepalived:<instance>,<owner>,<pool>` adopts a hand-made `vrrp_instance` from keepalived's main configuration (see `keepalived_instance`); " +
			"it must hold exactly one address, of the pool, and carry nothing lbhost's instance does not (scripts, authentication, notify): the import fails naming the line otherwise.",
		Attributes: claimSchema{
			ownerValidators:   []validator.String{ownerCheck},
			pool:              "IPv4 CIDR (/30 or larger) or IPv6 CIDR (/126 or larger) the address comes from; of an IPv6 pool, allocation considers the first 65536 addresses.",
			poolValidators:    []validator.String{cidrCheck},
			address:           "The address: requested, or allocated at apply time (known after apply on create).",
			addressValidators: []validator.String{ipCheck},
			share: "A share token (tfccm's `service.shared_ip`): owners with the same token may claim one address, each its own " +
				"line of the claim file; allocation takes an address claimed with the token first. The address (with `vrrp`: one VRRP " +
				"instance, `keepalived/share.<token>.conf`) stays until its last sharer is destroyed. Whether the sharers' ports clash " +
				"is checked by whoever sets the token (tfccm), not here.",
		}.attributes(map[string]schema.Attribute{
			"interface": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("lo"),
				Description: "Interface the address is added to (by lbhost, or by keepalived with `vrrp`).",
				Validators:  []validator.String{ifaceCheck}, PlanModifiers: replace},
			"standby": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Claim the address (and with `vrrp` its virtual router id) without announcing it: no address on `interface`, " +
					"no VRRP instance, while another speaker still announces it (a migration from MetalLB: the frontends listen, " +
					"with `ip_nonlocal_bind`). Changes in place: `false` announces the address (adds it, or writes and loads the VRRP " +
					"instance) in one quick apply, `true` withdraws it again unless another owner shares it. In effect when claimed."},
			"keepalived_instance": schema.StringAttribute{Computed: true,
				Description: "The name of the hand-made keepalived `vrrp_instance` this VIP adopted (import `keepalived:<instance>,<owner>,<pool>`), null for a VIP lbhost created. " +
					"The apply after the import moves the instance out of keepalived's main configuration (`keepalived_config`, backed up as `<config>.tfccm-adopted-<instance>`) " +
					"into lbhost's fragment, under this name (keepalived keeps an instance's state across a reload by its name: the VIP stays where it is), with the VIP's " +
					"`vrrp` settings, checked with `keepalived -t` and applied by one reload; until then the VIP is not `in_effect`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"in_effect": schema.BoolAttribute{Computed: true,
				Description: "Whether the VIP was in effect at the last refresh: claimed by `owner` and its address configured (with `vrrp`: " +
					"held by its VRRP instance). A refresh that finds only part of it on the host sets it false, and the next apply " +
					"configures the VIP again in place.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()}},
			"vrrp": schema.SingleNestedAttribute{
				Optional: true,
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplaceIf(
					func(_ context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
						resp.RequiresReplace = req.StateValue.IsNull() != req.PlanValue.IsNull()
					}, "Adding or removing vrrp replaces the VIP.", "Adding or removing vrrp replaces the VIP.")},
				Description: "Hold the address with a keepalived VRRP instance (bare-metal LB hosts) instead of adding it directly: " +
					"written as `keepalived/<owner>.conf` under `config_dir` (keepalived's main configuration must `include` that directory), " +
					"checked with `keepalived -t` and applied by a reload (SIGHUP). Every field changes in place; adding or removing `vrrp` replaces the VIP. " +
					"Destroying it removes the instance: a master gives the address up with a priority-0 advert and a peer takes over at once. " +
					"A frontend on the address should take it from where the VIP does (e.g. `lbhost_vip_allocation`) and the VIP depend on the frontend (`depends_on`), " +
					"so that a destroy hands the VIP over before the frontend goes (the baremetal set does).",
				Attributes: map[string]schema.Attribute{
					"interface": schema.StringAttribute{Required: true, Description: "Interface VRRP adverts are sent on.",
						Validators: []validator.String{ifaceCheck}},
					"virtual_router_id": schema.Int64Attribute{Optional: true, Computed: true,
						Description: "VRRP virtual router id (1-255), the same on every host of the group. Unset: allocated at apply time " +
							"(known after apply on create) from `virtual_router_id_range`, together with the address and under the same lock: " +
							"the owner's existing id, else the lowest id no other lbhost VRRP instance on the host uses on `vrrp.interface`. " +
							"A set id used by another owner on the host fails the apply naming this field.",
						Validators:    []validator.Int64{int64Range{1, 255}},
						PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
					"virtual_router_id_range": schema.StringAttribute{Optional: true,
						Description: "`<first>-<last>` (e.g. `50-99`): the ids `virtual_router_id` is allocated from when unset. " +
							"Give the other hosts of the group the allocated id (e.g. `lbhost_vip.first.vrrp.virtual_router_id`).",
						Validators: []validator.String{stringCheck{desc: "<first>-<last>, from 1 to 255", ok: func(s string) bool { _, _, ok := host.ParseVRIDRange(s); return ok }}}},
					"priority": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(100),
						Description: "This host's priority (1-254); the highest live host holds the VIP.", Validators: []validator.Int64{int64Range{1, 254}}},
					"advert_int": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
						Description: "Seconds between adverts; failover takes about 3 of them.", Validators: []validator.Int64{int64Range{1, 255}}},
					"nopreempt": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						Description: "A recovered higher-priority host does not take the VIP back (no flapping)."},
					"source_address": schema.StringAttribute{Optional: true, Description: "unicast_src_ip: this host's address for unicast adverts; only together with `peers` (a host without peers leaves it unset). Of the VIP's family: keepalived makes an instance with an IPv6 VIP an IPv6 one (VRRPv3), whose adverts go over IPv6.",
						Validators: []validator.String{stringCheck{desc: "an IP address", ok: isIP}}},
					"peers": schema.ListAttribute{Optional: true, ElementType: types.StringType,
						Validators:  []validator.List{eachString{stringCheck{desc: "an IP address", ok: isIP}}},
						Description: "The other hosts' addresses, of the VIP's family: unicast VRRP, for networks that filter multicast. Unset: multicast (224.0.0.18, or ff02::12 from the interface's link-local address for an IPv6 VIP)."},
				},
			},
		}),
	}
}

func (m vipModel) vip() (host.VIP, error) {
	pool, err := parsePool(m.Pool)
	if err != nil {
		return host.VIP{}, err
	}
	v := host.VIP{Owner: m.Owner.ValueString(), Pool: pool, Interface: m.Interface.ValueString(), Share: m.Share.ValueString(),
		Standby: m.Standby.ValueBool()}
	if m.VRRP != nil {
		in, diags := m.VRRP.instance(context.Background())
		if diags.HasError() {
			return v, fmt.Errorf("vrrp.peers: not a list of strings")
		}
		v.VRRP = in
		if !m.KeepalivedInstance.IsUnknown() {
			in.Name = m.KeepalivedInstance.ValueString()
		}
		if m.VRRP.VirtualRouterID.IsUnknown() {
			in.VirtualRouterID = 0
		}
		if !m.VRRP.VRIDRange.IsNull() {
			first, last, ok := host.ParseVRIDRange(m.VRRP.VRIDRange.ValueString())
			if !ok {
				return v, &host.FieldError{Field: "vrrp.virtual_router_id_range", Msg: fmt.Sprintf("%q must be <first>-<last> from 1 to 255", m.VRRP.VRIDRange.ValueString())}
			}
			v.VRIDRange = [2]int{first, last}
		}
	}
	v.Address = requested(m.Address)
	return v, nil
}

// ValidateConfig rejects, at plan time, a VRRP source address without
// peers (keepalived's configuration check would reject it at apply).
func (r *vipResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var source types.String
	var peers types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("vrrp").AtName("source_address"), &source)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("vrrp").AtName("peers"), &peers)...)
	if resp.Diagnostics.HasError() || source.IsNull() || source.IsUnknown() || peers.IsUnknown() {
		return
	}
	if peers.IsNull() || len(peers.Elements()) == 0 {
		resp.Diagnostics.AddAttributeError(path.Root("vrrp").AtName("source_address"), "lbhost_vip: vrrp.source_address without peers",
			"vrrp.source_address: "+keepalived.ErrSourceWithoutPeers.Error()+".")
	}
}

// ModifyPlan plans to restore a VIP not in effect (planRestore) and checks
// a requested address at plan time: inside the pool and not owned by
// anyone else on the host.
func (r *vipResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	resp.Diagnostics.Append(planRestore(ctx, req, resp)...)
	if r.c == nil || r.c.unknown {
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
	if keptUnreachable(&resp.Diagnostics, "lbhost_vip "+v.Owner, err) {
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+v.Owner, err)
		return
	}
	if err := h.CheckRequest(ctx, v); err != nil {
		addError(&resp.Diagnostics, "lbhost_vip "+v.Owner, err)
	}
}

func (r *vipResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var v host.VIP
	createClaim(ctx, req, resp, vipModel.summary, func(m *vipModel) (string, error) {
		var err error
		if v, err = m.vip(); err != nil {
			return "", err
		}
		h, err := r.c.host(ctx)
		if err != nil {
			if v.Address != "" && (v.VRRP == nil || v.VRRP.VirtualRouterID != 0) && pendingUnreachable(&resp.Diagnostics, m.summary(), err) {
				return v.Address, nil // decided elsewhere (lbhost_vip_allocation): pending on this host
			}
			return "", err
		}
		return h.ClaimVIP(ctx, v)
	}, func(m *vipModel, addr string, err error) {
		// Claimed, even if configuring the address failed.
		m.ID, m.Address, m.InEffect = m.Owner, types.StringValue(addr), types.BoolValue(err == nil)
		m.KeepalivedInstance = types.StringNull()
		if m.VRRP != nil {
			// ClaimVIP filled in an allocated virtual router id.
			m.VRRP.VirtualRouterID = types.Int64Value(int64(v.VRRP.VirtualRouterID))
		}
	})
}

// summary names the VIP in a diagnostic.
func (m vipModel) summary() string { return "lbhost_vip " + m.Owner.ValueString() }

func (r *vipResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, ok := readPrior[vipModel](ctx, req, resp)
	if !ok {
		return
	}
	held := readHosted(ctx, r.c, resp, m.summary(), func(h *host.Host) (*host.HeldVIP, error) {
		if m.Standby.ValueBool() {
			// On standby the claim is all there is: in effect while it is there.
			if claimed, err := h.HasClaim(ctx, m.Owner.ValueString(), m.Address.ValueString()); err != nil || !claimed {
				return nil, err
			}
			return &host.HeldVIP{}, nil
		}
		held, err := h.ReadVIP(ctx, m.Owner.ValueString(), m.Share.ValueString(), m.Address.ValueString(), m.Interface.ValueString(), m.VRRP != nil)
		if held == nil && err == nil && !m.KeepalivedInstance.IsNull() && m.notInEffect() {
			return readAdopting(ctx, h, m) // imported, not moved yet
		}
		return held, err
	}, func() diag.Diagnostics {
		inert := m
		inert.InEffect = types.BoolValue(false) // the next apply restores it
		return resp.State.Set(ctx, &inert)
	})
	if held == nil {
		return
	}
	changed := false
	if m.Standby.IsNull() {
		m.Standby, changed = types.BoolValue(false), true // a state from before standby: no diff for it
	}
	if m.notInEffect() {
		m.InEffect, changed = types.BoolValue(true), true // restored on the host
	}
	if in := held.VRRP; m.VRRP != nil && in != nil {
		want, _ := m.VRRP.instance(ctx)
		want.Owner, want.Address, want.AddressInterface, want.Name, want.AddressBits = in.Owner, in.Address, in.AddressInterface, in.Name, in.AddressBits
		if fmt.Sprint(*want) != fmt.Sprint(*in) {
			m.VRRP, changed = fromInstance(*in, m.VRRP), true
		}
	}
	if changed {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

// notInEffect reports whether Read found m's VIP not in effect (a state
// written before in_effect existed has it null: in effect).
func (m vipModel) notInEffect() bool { return !m.InEffect.IsNull() && !m.InEffect.ValueBool() }

// planRestore plans an in-place update of a VIP that Read found not in
// effect: Update then configures it again.
func planRestore(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) diag.Diagnostics {
	if req.State.Raw.IsNull() {
		return nil
	}
	var prior vipModel
	if diags := req.State.Get(ctx, &prior); diags.HasError() || !prior.notInEffect() {
		return diags
	}
	return resp.Plan.SetAttribute(ctx, path.Root("in_effect"), types.BoolUnknown())
}

// Update configures a VIP not in effect again (claim, address or VRRP
// instance, with the address it has) and changes the VRRP instance in
// place; every other argument requires replacement. Adding or removing
// vrrp replaces the VIP.
func (r *vipResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior vipModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.InEffect = types.BoolValue(true)
	if _, err := r.c.host(ctx); pendingUnreachable(&resp.Diagnostics, m.summary(), err) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if prior.notInEffect() {
		// Not in effect at the last refresh: claimed and configured again,
		// with its address.
		v, err := m.vip()
		var h *host.Host
		if err == nil {
			h, err = r.c.host(ctx)
		}
		if err == nil {
			_, err = h.ClaimVIP(ctx, v)
		}
		if err != nil {
			addError(&resp.Diagnostics, m.summary(), err)
			m.InEffect = types.BoolValue(false) // the next apply tries again
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if standby, was := m.Standby.ValueBool(), prior.Standby.ValueBool(); standby != was {
		resp.Diagnostics.Append(r.announce(ctx, m, standby)...)
		if !resp.Diagnostics.HasError() {
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		}
		return
	}
	if m.VRRP != nil && !m.Standby.ValueBool() {
		v, err := m.vip()
		var h *host.Host
		if err == nil {
			h, err = r.c.host(ctx)
		}
		if err == nil {
			in := *v.VRRP
			in.Owner, in.Address, in.AddressInterface = host.VRRPOwner(v.Owner, v.Share), m.Address.ValueString(), v.Interface
			err = h.UpdateVRRP(ctx, in)
		}
		if err != nil {
			addError(&resp.Diagnostics, m.summary(), err)
			if !host.IsPartial(err) {
				return
			}
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// announce configures m's VIP on the host (standby false: the address, or
// its VRRP instance) or withdraws it (standby true), keeping the claim.
func (r *vipResource) announce(ctx context.Context, m vipModel, standby bool) diag.Diagnostics {
	var diags diag.Diagnostics
	v, err := m.vip()
	var h *host.Host
	if err == nil {
		h, err = r.c.host(ctx)
	}
	switch {
	case err != nil:
	case standby:
		err = h.WithdrawVIP(ctx, v.Owner, v.Share, m.Address.ValueString(), v.Interface, v.VRRP != nil)
	default:
		v.Address = m.Address.ValueString()
		_, err = h.ClaimVIP(ctx, v)
	}
	if err != nil {
		addError(&diags, m.summary(), err)
	}
	return diags
}

func (r *vipResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteHosted(ctx, r.c, req, resp, vipModel.summary, func(h *host.Host, m vipModel) error {
		return h.ReleaseVIP(ctx, m.Owner.ValueString(), m.Share.ValueString(), m.Address.ValueString(), m.Interface.ValueString(), m.VRRP != nil)
	})
}

// ImportState takes "<owner>,<pool>[,<interface>]", or
// "keepalived:<instance>,<owner>,<pool>" to adopt a hand-made instance.
func (r *vipResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if a, ok, err := parseAdoptID(req.ID); ok {
		if err != nil {
			resp.Diagnostics.AddError("import lbhost_vip", fmt.Sprintf("id %q: %v", req.ID, err))
			return
		}
		r.importAdoptedVIP(ctx, a, resp)
		return
	}
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
		Address: types.StringValue(addr), Interface: types.StringValue(iface), Share: types.StringNull(), InEffect: types.BoolValue(true), Standby: types.BoolValue(false),
		KeepalivedInstance: types.StringNull()}
	// A VIP held by keepalived is adopted with its VRRP instance.
	in, err := h.ReadVRRP(ctx, parts[0])
	if err != nil {
		addError(&resp.Diagnostics, "import lbhost_vip "+parts[0], err)
		return
	}
	if in != nil && in.Address == addr {
		m.VRRP = fromInstance(*in, nil)
		if in.Name != "" {
			m.KeepalivedInstance = types.StringValue(in.Name) // adopted before
		}
		if len(parts) < 3 {
			m.Interface = types.StringValue(in.AddressInterface)
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
