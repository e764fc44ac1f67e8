// The lbhost_host_health data source.

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// hostHealthDataSource reads everything a template set's hosts health
// module needs of one host in one go: every load balancer's backends, every
// VRRP VIP's holding and the BGP sessions (tfccm.io/Degraded, VIPHeld and
// BGPEstablished of every Service the host serves, from one read per host
// per health interval instead of one per load balancer).
type hostHealthDataSource struct{ c *conn }

func newHostHealthDataSource() datasource.DataSource { return &hostHealthDataSource{} }

type hostHealthModel struct {
	Reads       []string                      `tfsdk:"reads"`
	Reachable   types.Bool                    `tfsdk:"reachable"`
	Frontends   map[string]hostHealthBackends `tfsdk:"frontends"`
	L4Frontends map[string]hostHealthBackends `tfsdk:"l4_frontends"`
	VIPs        map[string]hostHealthVIPModel `tfsdk:"vips"`
	BGPSessions []bgpSessionModel             `tfsdk:"bgp_sessions"`
}

type hostHealthBackends struct {
	Backends []backendHealthEntry `tfsdk:"backends"`
}

type hostHealthVIPModel struct {
	Address string `tfsdk:"address"`
	Held    bool   `tfsdk:"held"`
}

func (d *hostHealthDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_health"
}

func (d *hostHealthDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	backends := schema.ListNestedAttribute{Computed: true, Description: "The load balancer's backends, as `lbhost_backend_health` reads them.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name":    schema.StringAttribute{Computed: true, Description: "The server (node) name."},
			"address": schema.StringAttribute{Computed: true, Description: "The backend's address."},
			"healthy": schema.BoolAttribute{Computed: true, Description: "Whether the load balancer sends it traffic."},
		}}}
	resp.Schema = schema.Schema{
		Description: "Everything one host serves, read at once: the backends of every `lbhost_frontend` (one `show servers state`), " +
			"of every `lbhost_l4_frontend` the router has loaded, the holding of every `lbhost_vip`'s VRRP instance (one `ip -j addr`) " +
			"and the BGP sessions: what `lbhost_backend_health`, `lbhost_vip_holder` and `lbhost_bgp_sessions` read for one load " +
			"balancer, for all of them with one connection and a handful of commands. tfccm's hosts health modules read it once per " +
			"host per health interval. Reading changes nothing and takes no lock.",
		Attributes: map[string]schema.Attribute{
			"reads": schema.ListAttribute{Required: true, ElementType: types.StringType, Description: "What to read: any of " +
				"`haproxy` (frontends), `l4` (l4_frontends), `vrrp` (vips), `bgp` (bgp_sessions); the others stay empty."},
			"reachable": schema.BoolAttribute{Computed: true, Description: "Whether the host could be connected to: false (and " +
				"everything empty) when it could not be at all; any other error fails the read."},
			"frontends": schema.MapNestedAttribute{Computed: true, Description: "Per `lbhost_frontend` name HAProxy runs, its backends.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{"backends": backends}}},
			"l4_frontends": schema.MapNestedAttribute{Computed: true, Description: "Per `lbhost_l4_frontend` name the router has " +
				"loaded, its backends (forwarded to or not).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{"backends": backends}}},
			"vips": schema.MapNestedAttribute{Computed: true, Description: "Per VRRP instance on the host, by its owner (the " +
				"`lbhost_vip`'s owner, or `share.<share>` for a shared VIP): its VIP and whether the host holds it now.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"address": schema.StringAttribute{Computed: true, Description: "The instance's VIP."},
					"held":    schema.BoolAttribute{Computed: true, Description: "Whether the address is on the instance's interface now."},
				}}},
			"bgp_sessions": schema.ListNestedAttribute{Computed: true, Description: "The host's BGP sessions, as `lbhost_bgp_sessions` reads them.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"peer":        schema.StringAttribute{Computed: true, Description: "The peer's name."},
					"address":     schema.StringAttribute{Computed: true, Description: "The peer's address."},
					"state":       schema.StringAttribute{Computed: true, Description: "BGP's state."},
					"established": schema.BoolAttribute{Computed: true, Description: "Whether the session is up."},
				}}},
		},
	}
}

func (d *hostHealthDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *hostHealthDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m hostHealthModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.Frontends, m.L4Frontends = map[string]hostHealthBackends{}, map[string]hostHealthBackends{}
	m.VIPs, m.BGPSessions = map[string]hostHealthVIPModel{}, []bgpSessionModel{}
	h, err := d.c.host(ctx)
	if transport.IsUnreachable(err) {
		m.Reachable = types.BoolValue(false)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_host_health", err)
		return
	}
	got, err := h.ReadHealth(ctx, m.Reads)
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_host_health", err)
		return
	}
	m.Reachable = types.BoolValue(true)
	m.Frontends, m.L4Frontends = backendsByName(got.Frontends), backendsByName(got.L4Frontends)
	for owner, v := range got.VIPs {
		m.VIPs[owner] = hostHealthVIPModel{Address: v.Address, Held: v.Held}
	}
	for _, s := range got.BGPSessions {
		m.BGPSessions = append(m.BGPSessions, bgpSessionModel{Peer: s.Peer, Address: s.Address, State: s.State, Established: s.State == "Established"})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func backendsByName(in map[string][]host.BackendHealth) map[string]hostHealthBackends {
	out := make(map[string]hostHealthBackends, len(in))
	for name, hs := range in {
		b := hostHealthBackends{Backends: []backendHealthEntry{}}
		for _, x := range hs {
			b.Backends = append(b.Backends, backendHealthEntry{Name: x.Name, Address: x.Address, Healthy: x.Healthy})
		}
		out[name] = b
	}
	return out
}
