// The lbhost_routed_vip resource.

package tfprovider

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/router"
)

type routedVIPResource struct{ connected }

func newRoutedVIPResource() resource.Resource { return &routedVIPResource{} }

type routedVIPModel struct {
	ID          types.String      `tfsdk:"id"`
	Owner       types.String      `tfsdk:"owner"`
	Pool        types.String      `tfsdk:"pool"`
	Address     types.String      `tfsdk:"address"`
	Nexthops    []string          `tfsdk:"nexthops"`
	HealthCheck *routedCheckModel `tfsdk:"health_check"`
	Hash        types.String      `tfsdk:"hash"`
	Share       types.String      `tfsdk:"share"`
}

type routedCheckModel struct {
	Protocol   string       `tfsdk:"protocol"`
	Port       int64        `tfsdk:"port"`
	Path       types.String `tfsdk:"path"`
	IntervalMS types.Int64  `tfsdk:"interval_ms"`
	Rise       types.Int64  `tfsdk:"rise"`
	Fall       types.Int64  `tfsdk:"fall"`
}

func (r *routedVIPResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_routed_vip"
}

func (r *routedVIPResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A virtual IP claimed from a pool on the host (like `lbhost_vip`, allocated at apply time under the host's lock " +
			"unless `address` is set) that the host routes, instead of holding it: the host's router service (`lbhost-router`, " +
			"reading `config_dir/routed/`) health-checks every next hop and keeps one kernel route to the VIP, ECMP over the next hops " +
			"that pass, none when none does. The next hops serve the VIP themselves (kube-proxy does for a load balancer IP of " +
			"`ip_mode = \"VIP\"`), so client addresses are preserved and every protocol passes. Next hops and the check change in " +
			"place. Read reports a config or claim removed or changed on the host as routing to no next hop (`nexthops` empty): kept in state, " +
			"so a destroy removes what is left, and written again by the next apply; a routed VIP of which nothing is left is gone from state. " +
			"Import with the owner.",
		Attributes: claimSchema{
			pool:    "IPv4 CIDR the address comes from.",
			address: "The VIP. Set it to request an address; otherwise one is allocated at apply time.",
			share: "A share token, as `lbhost_vip`'s: owners with the same token may route one address, each with its own " +
				"config; the router routes the address once, over the next hops of the config of the lowest owner.",
		}.attributes(map[string]schema.Attribute{
			"nexthops": schema.ListAttribute{Required: true, ElementType: types.StringType,
				Description: "IPv4 addresses the VIP is routed to while they pass the health check."},
			"hash": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(router.HashFlow),
				Validators: []validator.String{oneOf(router.HashFlow, router.HashClient)},
				Description: "How connections are spread over the healthy next hops: `flow` (by addresses and ports) or `client` " +
					"(by client address only: all connections of a client reach the same next hop, as client-IP session affinity " +
					"needs; the router marks them with nftables, so the host needs `nft`). Changes in place."},
			"health_check": schema.SingleNestedAttribute{Required: true,
				Description: "How every next hop is checked.",
				Attributes: map[string]schema.Attribute{
					"protocol": schema.StringAttribute{Required: true, Description: "`HTTP`, `HTTPS` (GET expecting 200) or `TCP` (connect)."},
					"port":     schema.Int64Attribute{Required: true, Description: "Port checked on every next hop."},
					"path":     schema.StringAttribute{Optional: true, Description: "URL path for HTTP(S)."},
					"interval_ms": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1000),
						Description: "Milliseconds between checks of a next hop."},
					"rise": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
						Description: "Successes before a down next hop is routed to again (a new one is routed to after its first)."},
					"fall": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
						Description: "Failures before a next hop is no longer routed to."},
				},
			},
		}),
	}
}

func (m routedVIPModel) routed() (host.RoutedVIP, error) {
	pool, err := parsePool(m.Pool)
	if err != nil {
		return host.RoutedVIP{}, err
	}
	hc := m.HealthCheck
	if hc == nil {
		return host.RoutedVIP{}, &host.FieldError{Field: "health_check", Msg: "is required"}
	}
	return host.RoutedVIP{Owner: m.Owner.ValueString(), Pool: pool, Address: requested(m.Address), Nexthops: slices.Clone(m.Nexthops), Hash: m.Hash.ValueString(), Share: m.Share.ValueString(), Check: router.Check{
		Protocol: hc.Protocol, Port: int(hc.Port), Path: hc.Path.ValueString(),
		IntervalMS: int(hc.IntervalMS.ValueInt64()), Rise: int(hc.Rise.ValueInt64()), Fall: int(hc.Fall.ValueInt64()),
	}}, nil
}

// write claims the address and writes the router's config.
func (r *routedVIPResource) write(ctx context.Context, m *routedVIPModel) (string, error) {
	v, err := m.routed()
	if err != nil {
		return "", err
	}
	h, err := r.c.host(ctx)
	if err != nil {
		return "", err
	}
	return h.ApplyRoutedVIP(ctx, v)
}

func (r *routedVIPResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	createClaim(ctx, req, resp, routedVIPModel.summary, func(m *routedVIPModel) (string, error) { return r.write(ctx, m) },
		func(m *routedVIPModel, addr string, _ error) { m.ID, m.Address = m.Owner, types.StringValue(addr) })
}

// summary names the routed VIP in a diagnostic.
func (m routedVIPModel) summary() string { return "lbhost_routed_vip " + m.Owner.ValueString() }

func (r *routedVIPResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, ok := readPrior[routedVIPModel](ctx, req, resp)
	if !ok {
		return
	}
	c := readHosted(ctx, r.c, resp, m.summary(), func(h *host.Host) (*router.Config, error) {
		return h.ReadRoutedVIP(ctx, m.Owner.ValueString(), m.Address.ValueString())
	}, func() diag.Diagnostics {
		inert := m
		inert.Nexthops = []string{} // routed to no next hop
		return resp.State.Set(ctx, &inert)
	})
	if c == nil {
		return
	}
	m.Nexthops = c.Nexthops
	m.Hash = types.StringValue(cmp.Or(c.Hash, router.HashFlow))
	if m.HealthCheck == nil {
		m.HealthCheck = &routedCheckModel{Path: types.StringNull()}
	}
	m.HealthCheck.Protocol, m.HealthCheck.Port = c.Check.Protocol, int64(c.Check.Port)
	if c.Check.Path != "" || !m.HealthCheck.Path.IsNull() {
		m.HealthCheck.Path = types.StringValue(c.Check.Path)
	}
	m.HealthCheck.IntervalMS = types.Int64Value(int64(c.Check.IntervalMS))
	m.HealthCheck.Rise, m.HealthCheck.Fall = types.Int64Value(int64(c.Check.Rise)), types.Int64Value(int64(c.Check.Fall))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update rewrites the router's config in place (next hops, check).
func (r *routedVIPResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, routedVIPModel.summary, func(m *routedVIPModel) error {
		_, err := r.write(ctx, m)
		return err
	})
}

func (r *routedVIPResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteHosted(ctx, r.c, req, resp, routedVIPModel.summary, func(h *host.Host, m routedVIPModel) error {
		return h.DeleteRoutedVIP(ctx, m.Owner.ValueString(), m.Address.ValueString())
	})
}

// ImportState takes "<owner>,<pool>"; Read fills in the rest from the host.
func (r *routedVIPResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	owner, pool, ok := strings.Cut(req.ID, ",")
	if !ok || owner == "" || pool == "" {
		resp.Diagnostics.AddError("import lbhost_routed_vip", fmt.Sprintf("id %q: want <owner>,<pool>", req.ID))
		return
	}
	h, err := r.c.host(ctx)
	var c *router.Config
	if err == nil {
		c, err = h.ReadRoutedVIP(ctx, owner, "")
	}
	if err != nil {
		addError(&resp.Diagnostics, "import lbhost_routed_vip "+owner, err)
		return
	}
	if c == nil {
		resp.Diagnostics.AddError("import lbhost_routed_vip "+owner, fmt.Sprintf("%s has no routed VIP on %s", owner, h.T))
		return
	}
	for attr, v := range map[string]string{"id": owner, "owner": owner, "pool": pool, "address": c.Address, "hash": cmp.Or(c.Hash, router.HashFlow)} {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(attr), v)...)
	}
}
