// The lbhost_bgp_router resource: the LB hosts as neighbours on a Linux
// router the admin runs (FRR over the same SSH transport).

package tfprovider

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

var (
	_ resource.ResourceWithModifyPlan     = (*bgpRouterResource)(nil)
	_ resource.ResourceWithValidateConfig = (*bgpRouterResource)(nil)
)

type bgpRouterResource struct{ connected }

func newBGPRouterResource() resource.Resource { return &bgpRouterResource{} }

type bgpRouterModel struct {
	ID           types.String      `tfsdk:"id"`
	ASN          int64             `tfsdk:"asn"`
	Neighbors    []bgpPeerModel    `tfsdk:"neighbors"`
	BFDProfiles  []bfdProfileModel `tfsdk:"bfd_profiles"`
	Prefixes     []string          `tfsdk:"prefixes"`
	MaximumPaths types.Int64       `tfsdk:"maximum_paths"`
	ConfigHash   types.String      `tfsdk:"config_hash"`
}

func (r *bgpRouterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_bgp_router"
}

func (r *bgpRouterResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The router side of the LB hosts' peering, on a Linux router running FRR that its admin configures (the provider connects to the router " +
			"as to an LB host; `frr_config` is the router's FRR file). Adds, inside the admin's existing `router bgp <asn>`, a neighbour per LB host " +
			"(described `tfccm-<name>`, with its password read from a file on the router, timers and a BFD profile `tfccm-<profile>`), an inbound " +
			"route map `tfccm-lb-in` taking only /32 and /128 routes inside `prefixes`, an outbound `tfccm-lb-out` sending nothing, and ECMP " +
			"(`maximum-paths`, unless the admin set one). Every object is named tfccm-* and sits in one marked section of the file: the rest is the admin's and " +
			"is never rewritten. Checked with `vtysh -C`, applied with `frr-reload.py` (only what differs changes: the admin's sessions stay up). Destroying it " +
			"removes tfccm's objects alone.",
		Attributes: map[string]schema.Attribute{
			"id":  schema.StringAttribute{Computed: true, Description: "`frr-router`."},
			"asn": schema.Int64Attribute{Required: true, Description: "The router's AS: its configuration must have `router bgp <asn>` (tfccm never creates one)."},
			"neighbors": schema.ListNestedAttribute{Required: true, Description: "The LB hosts (their AS in `asn`).",
				NestedObject: schema.NestedAttributeObject{Attributes: peerAttributes(
					"The LB host's address (IPv4 or IPv6) on one of the router's networks.",
					"Path, on the router, of a file holding the session's TCP MD5 password (the router's copy of the Secret; 1-80 printable characters "+
						"without spaces, a trailing newline dropped). Read over SSH at plan and apply, never kept: not in the plan, the state or a log.")}},
			"bfd_profiles": bfdProfilesAttribute(),
			"prefixes": schema.ListAttribute{Required: true, ElementType: types.StringType,
				Description: "The pools' CIDRs: a neighbour's /32 or /128 inside one is accepted, every other route refused."},
			"maximum_paths": schema.Int64Attribute{Optional: true, Description: "ECMP's equal paths per family (1-64). Default one per LB host of the family, at least 2. " +
				"Written only where the admin's configuration has no maximum-paths of its own."},
			"config_hash": schema.StringAttribute{Computed: true, Description: "Hash of tfccm's section of the router's file with its passwords masked: a change made on the router is a diff."},
		},
	}
}

func (m bgpRouterModel) summary() string { return "lbhost_bgp_router" }

// peering is the typed router side, with the password files to read on
// the router.
func (m bgpRouterModel) peering() (host.RouterPeering, error) {
	var p host.RouterPeering
	if err := checkASNRange("asn", m.ASN); err != nil {
		return p, err
	}
	p.ASN = uint32(m.ASN)
	for i, n := range m.Neighbors {
		peer, err := n.peer(fmt.Sprintf("neighbors[%d]", i))
		if err != nil {
			return p, err
		}
		p.Neighbors = append(p.Neighbors, peer)
		p.PasswordFiles = append(p.PasswordFiles, n.PasswordFile.ValueString())
	}
	p.BFDProfiles = bfdProfiles(m.BFDProfiles)
	for i, s := range m.Prefixes {
		pr, err := netip.ParsePrefix(s)
		if err != nil {
			return p, &frr.Error{Field: fmt.Sprintf("prefixes[%d]", i), Msg: fmt.Sprintf("%q is not a CIDR", s)}
		}
		p.Prefixes = append(p.Prefixes, pr)
	}
	p.MaximumPaths = int(m.MaximumPaths.ValueInt64())
	return p, p.Validate()
}

// ValidateConfig checks every value at plan, without the router.
func (r *bgpRouterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	var m bgpRouterModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := m.peering(); err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
	}
}

// ModifyPlan checks the neighbours against the router (its networks, its
// `router bgp`, the password files) and plans the section's hash.
func (r *bgpRouterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.Config.Raw.IsFullyKnown() || r.c == nil {
		return
	}
	var m bgpRouterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, err := m.peering()
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	h, err := r.c.host(ctx)
	var sum string
	if err == nil {
		sum, err = h.PlanRouter(ctx, p)
	}
	switch {
	case transport.IsUnreachable(err):
		resp.Diagnostics.AddWarning(m.summary()+": router unreachable", err.Error()+"; its neighbours are checked when it answers")
	case err != nil:
		addError(&resp.Diagnostics, m.summary(), err)
	default:
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("config_hash"), sum)...)
	}
}

func (r *bgpRouterResource) write(ctx context.Context, m *bgpRouterModel) error {
	p, err := m.peering()
	if err != nil {
		return err
	}
	h, err := r.c.host(ctx)
	if err != nil {
		return err
	}
	if err := h.ApplyRouter(ctx, p); err != nil {
		return err
	}
	sum, err := h.RouterHash(ctx)
	if err != nil {
		return err
	}
	m.ID, m.ConfigHash = types.StringValue("frr-router"), types.StringValue(sum)
	return nil
}

func (r *bgpRouterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, bgpRouterModel.summary, func(m *bgpRouterModel) error { return r.write(ctx, m) })
}

func (r *bgpRouterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, bgpRouterModel.summary, func(m *bgpRouterModel) error { return r.write(ctx, m) })
}

// Read reports the hash of tfccm's section on the router: edited or gone,
// the next plan updates it.
func (r *bgpRouterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	readFRRHash(ctx, r.c, req, resp, bgpRouterModel.summary, func(m *bgpRouterModel) *types.String { return &m.ConfigHash }, (*host.Host).RouterHash)
}

func (r *bgpRouterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteHosted(ctx, r.c, req, resp, bgpRouterModel.summary, func(h *host.Host, _ bgpRouterModel) error { return h.DeleteRouter(ctx) })
}
