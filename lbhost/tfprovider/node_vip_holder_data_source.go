// The lbhost_node_vip_holder data source.

package tfprovider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// nodeVIPHolderDataSource reads which node holds a NodeVIP now, as the
// node agents report it in the object's status: what tfccm's nodes health
// module outputs as `vip_holders` (tfccm.io/VIPHeld,
// tfccm_load_balancer_vip_holders) and `backends`.
type nodeVIPHolderDataSource struct{ c *conn }

func newNodeVIPHolderDataSource() datasource.DataSource { return &nodeVIPHolderDataSource{} }

type nodeVIPHolderModel struct {
	Name       types.String `tfsdk:"name"`
	Exists     types.Bool   `tfsdk:"exists"`
	Held       types.Bool   `tfsdk:"held"`
	Holder     types.String `tfsdk:"holder"`
	Candidates []string     `tfsdk:"candidates"`
	Contenders []string     `tfsdk:"contenders"`
	Announcers []string     `tfsdk:"announcers"`
	Reason     types.String `tfsdk:"reason"`
}

func (d *nodeVIPHolderDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node_vip_holder"
}

func (d *nodeVIPHolderDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Node mode (a provider with `kubernetes`): which node holds an `lbhost_node_vip`'s address now, as the node agents " +
			"report it on the NodeVIP object's status, and the nodes they count eligible. Reading changes nothing.",
		Attributes: map[string]schema.Attribute{
			"name":   schema.StringAttribute{Required: true, Description: "The NodeVIP's name (the `lbhost_node_vip`'s `name`)."},
			"exists": schema.BoolAttribute{Computed: true, Description: "Whether the NodeVIP object exists."},
			"held": schema.BoolAttribute{Computed: true, Description: "Whether a node holds and announced the address for the object's " +
				"current spec (its Announced condition is True)."},
			"holder":     schema.StringAttribute{Computed: true, Description: "The node holding it; empty when none does."},
			"candidates": schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "The eligible nodes the agents chose the holder from, sorted."},
			"contenders": schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "The nodes answering for the address at once, sorted, when more than one does " +
				"(a split brain: their agents do not hear each other but reach the API server); empty otherwise."},
			"announcers": schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "BGP mode (`announce = \"bgp\"`): the nodes " +
				"announcing the address over BGP at once (active-active), sorted, when the Announced condition is True for the object's current spec; empty otherwise."},
			"reason": schema.StringAttribute{Computed: true, Description: "The Announced condition's reason (empty before any agent reported); " +
				"`NoLocalEndpoint`: externalTrafficPolicy Local and no ready endpoint on any node, so no node is meant to hold it."},
		},
	}
}

func (d *nodeVIPHolderDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *nodeVIPHolderDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m nodeVIPHolderModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cl, _, err := nodeVIPClient(d.c, "lbhost_node_vip_holder")
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip_holder: connect", err.Error())
		return
	}
	m.Exists, m.Held, m.Holder, m.Candidates, m.Contenders, m.Reason = types.BoolValue(false), types.BoolValue(false), types.StringValue(""), []string{}, []string{}, types.StringValue("")
	m.Announcers = []string{}
	u, err := cl.Get(ctx, m.Name.ValueString(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	case err != nil:
		resp.Diagnostics.AddError("lbhost_node_vip_holder: read", err.Error())
		return
	}
	v, err := vipapi.FromUnstructured(u)
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip_holder: read", err.Error())
		return
	}
	m.Exists = types.BoolValue(true)
	held := heldNow(v)
	m.Held = types.BoolValue(held)
	if held {
		m.Holder = types.StringValue(v.Status.Holder)
	}
	if v.Status.Candidates != nil {
		m.Candidates = slices.Sorted(slices.Values(v.Status.Candidates))
	}
	if held && len(v.Status.Contenders) > 1 {
		m.Contenders = slices.Sorted(slices.Values(v.Status.Contenders))
	}
	if announcedNow(v) {
		m.Announcers = slices.Sorted(slices.Values(v.Status.Announcers))
	}
	if c := v.Status.Announced(); c != nil {
		m.Reason = types.StringValue(c.Reason)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// heldNow: a node holds v's address for its current spec and announced it.
func heldNow(v *vipapi.NodeVIP) bool {
	c := v.Status.Announced()
	return v.Status.Holder != "" && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= v.Generation
}

// announcedNow: v's address is announced for its current spec (over BGP,
// by status.announcers).
func announcedNow(v *vipapi.NodeVIP) bool {
	c := v.Status.Announced()
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= v.Generation
}
