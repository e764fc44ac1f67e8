// The lbhost_vip_holder data source.

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// vipHolderDataSource reads whether the host holds a VRRP VIP now: what
// tfccm's baremetal health modules output as `vip_holders`
// (tfccm.io/VIPHeld, tfccm_load_balancer_vip_holders).
type vipHolderDataSource struct{ c *conn }

func newVIPHolderDataSource() datasource.DataSource { return &vipHolderDataSource{} }

type vipHolderModel struct {
	Owner     types.String `tfsdk:"owner"`
	Share     types.String `tfsdk:"share"`
	Address   types.String `tfsdk:"address"`
	Held      types.Bool   `tfsdk:"held"`
	Reachable types.Bool   `tfsdk:"reachable"`
}

func (d *vipHolderDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vip_holder"
}

func (d *vipHolderDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Whether the host holds an `lbhost_vip`'s VRRP VIP right now: the address of the owner's (or the shared) " +
			"keepalived instance is on the instance's interface, which keepalived makes so only on the VRRP master. Two hosts " +
			"holding one VIP is a split brain; none, a lost VIP. Reading changes nothing and takes no lock.",
		Attributes: map[string]schema.Attribute{
			"owner": schema.StringAttribute{Required: true, Description: "Owner of the `lbhost_vip`."},
			"share": schema.StringAttribute{Optional: true, Description: "The `lbhost_vip`'s share token, if any: the VRRP instance is the share's."},
			"address": schema.StringAttribute{Computed: true, Description: "The VIP of the instance; empty when the host runs " +
				"no instance for it (or could not be reached)."},
			"held": schema.BoolAttribute{Computed: true, Description: "Whether the address is on the host's interface now."},
			"reachable": schema.BoolAttribute{Computed: true, Description: "Whether the host could be connected to: false (and " +
				"not held) when it could not be at all; any other error fails the read."},
		},
	}
}

func (d *vipHolderDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *vipHolderDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m vipHolderModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := d.c.host(ctx)
	if transport.IsUnreachable(err) {
		m.Address, m.Held, m.Reachable = types.StringValue(""), types.BoolValue(false), types.BoolValue(false)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip_holder", err)
		return
	}
	held, err := h.HoldsVIP(ctx, m.Owner.ValueString(), m.Share.ValueString())
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_vip_holder", err)
		return
	}
	m.Address, m.Held, m.Reachable = types.StringValue(held.Address), types.BoolValue(held.Held), types.BoolValue(true)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
