// The lbhost_bgp_sessions data source.

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// bgpSessionsDataSource reads the host's BGP sessions now: what the
// baremetal set's bgp variant's health module outputs as `bgp_sessions`
// (tfccm.io/BGPEstablished, tfccm_bgp_session_up).
type bgpSessionsDataSource struct{ c *conn }

func newBGPSessionsDataSource() datasource.DataSource { return &bgpSessionsDataSource{} }

type bgpSessionsModel struct {
	Sessions  []bgpSessionModel `tfsdk:"sessions"`
	Reachable types.Bool        `tfsdk:"reachable"`
}

type bgpSessionModel struct {
	Peer        string `tfsdk:"peer"`
	Address     string `tfsdk:"address"`
	State       string `tfsdk:"state"`
	Established bool   `tfsdk:"established"`
}

func (d *bgpSessionsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_bgp_sessions"
}

func (d *bgpSessionsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The host's BGP sessions now, as bgpd reports them (`vtysh -c 'show bgp neighbors json'`, with the provider's " +
			"`frr_pathspace`). Reading changes nothing and takes no lock.",
		Attributes: map[string]schema.Attribute{
			"sessions": schema.ListNestedAttribute{Computed: true, Description: "Every peer, by address.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"peer":        schema.StringAttribute{Computed: true, Description: "The peer's name (`lbhost_bgp_speaker`'s peers[*].name)."},
					"address":     schema.StringAttribute{Computed: true, Description: "The peer's address."},
					"state":       schema.StringAttribute{Computed: true, Description: "BGP's state: `Established`, or `Idle`, `Connect`, `Active`, `OpenSent`, `OpenConfirm`."},
					"established": schema.BoolAttribute{Computed: true, Description: "Whether the session is up."},
				}}},
			"reachable": schema.BoolAttribute{Computed: true, Description: "Whether the host could be connected to: false (and no " +
				"sessions) when it could not be at all; any other error fails the read."},
		},
	}
}

func (d *bgpSessionsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *bgpSessionsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	m := bgpSessionsModel{Sessions: []bgpSessionModel{}}
	h, err := d.c.host(ctx)
	if transport.IsUnreachable(err) {
		m.Reachable = types.BoolValue(false)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_bgp_sessions", err)
		return
	}
	sessions, err := h.BGPSessions(ctx)
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_bgp_sessions", err)
		return
	}
	for _, s := range sessions {
		m.Sessions = append(m.Sessions, bgpSessionModel{Peer: s.Peer, Address: s.Address, State: s.State, Established: s.State == "Established"})
	}
	m.Reachable = types.BoolValue(true)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
