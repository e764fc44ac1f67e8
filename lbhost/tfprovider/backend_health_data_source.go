// The lbhost_backend_health data source.

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// backendHealthDataSource reads a load balancer's backend health from the
// host: what tfccm's template sets output as `backends` (tfccm.io/Degraded).
type backendHealthDataSource struct{ c *conn }

func newBackendHealthDataSource() datasource.DataSource { return &backendHealthDataSource{} }

type backendHealthModel struct {
	Frontend   types.String         `tfsdk:"frontend"`
	L4Frontend types.String         `tfsdk:"l4_frontend"`
	RoutedVIP  types.String         `tfsdk:"routed_vip"`
	Backends   []backendHealthEntry `tfsdk:"backends"`
	Reachable  types.Bool           `tfsdk:"reachable"`
}

type backendHealthEntry struct {
	Name    string `tfsdk:"name"`
	Address string `tfsdk:"address"`
	Healthy bool   `tfsdk:"healthy"`
}

func (d *backendHealthDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_backend_health"
}

func (d *backendHealthDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The backends of one load balancer and whether the load balancer itself finds them healthy: for an " +
			"`lbhost_frontend`, the running HAProxy's server states (`show servers state` on the master CLI; a server is healthy " +
			"when it is up and not in maintenance in the backend of every port); for an `lbhost_l4_frontend`, whether " +
			"lbhost-router's nftables rules forward new connections to it (they DNAT only to backends that pass the check; a " +
			"config the router has not loaded is an error); for an `lbhost_routed_vip`, whether the router " +
			"currently routes the VIP to each next hop (it routes only to hops that pass the check). Reading changes nothing " +
			"and takes no lock. Set exactly one of `frontend`, `l4_frontend` and `routed_vip`.",
		Attributes: map[string]schema.Attribute{
			"frontend":    schema.StringAttribute{Optional: true, Description: "Name of an `lbhost_frontend`."},
			"l4_frontend": schema.StringAttribute{Optional: true, Description: "Name of an `lbhost_l4_frontend`."},
			"routed_vip":  schema.StringAttribute{Optional: true, Description: "Owner of an `lbhost_routed_vip`."},
			"reachable": schema.BoolAttribute{Computed: true, Description: "Whether the host could be connected to: false (and no " +
				"backends) when it could not be at all; any other error (a wrong host key, a refused login) fails the read."},
			"backends": schema.ListNestedAttribute{Computed: true, Description: "The load balancer's backends (none when it " +
				"does not exist), sorted as the load balancer lists them.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Computed: true, Description: "The server (node) name; a next hop's address for a routed VIP."},
					"address": schema.StringAttribute{Computed: true, Description: "The backend's address."},
					"healthy": schema.BoolAttribute{Computed: true, Description: "Whether the load balancer sends it traffic."},
				}}},
		},
	}
}

func (d *backendHealthDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *backendHealthDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m backendHealthModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	set := 0
	for _, v := range []types.String{m.Frontend, m.L4Frontend, m.RoutedVIP} {
		if !v.IsNull() {
			set++
		}
	}
	if set != 1 {
		resp.Diagnostics.AddError("lbhost_backend_health: choose one load balancer", "Set exactly one of `frontend`, `l4_frontend` and `routed_vip`.")
		return
	}
	h, err := d.c.host(ctx)
	if transport.IsUnreachable(err) {
		m.Backends, m.Reachable = []backendHealthEntry{}, types.BoolValue(false)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_backend_health", err)
		return
	}
	m.Reachable = types.BoolValue(true)
	var hs []host.BackendHealth
	switch {
	case !m.Frontend.IsNull():
		hs, err = h.FrontendHealth(ctx, m.Frontend.ValueString())
	case !m.L4Frontend.IsNull():
		hs, err = h.L4FrontendHealth(ctx, m.L4Frontend.ValueString())
	default:
		hs, err = h.RoutedVIPHealth(ctx, m.RoutedVIP.ValueString())
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_backend_health", err)
		return
	}
	m.Backends = []backendHealthEntry{}
	for _, b := range hs {
		m.Backends = append(m.Backends, backendHealthEntry{Name: b.Name, Address: b.Address, Healthy: b.Healthy})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
