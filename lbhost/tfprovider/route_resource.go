// The lbhost_route resource.

package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
)

type routeResource struct{ connected }

func newRouteResource() resource.Resource { return &routeResource{} }

type routeModel struct {
	ID          types.String `tfsdk:"id"`
	Destination string       `tfsdk:"destination"`
	Gateway     *string      `tfsdk:"gateway"`
	Blackhole   bool         `tfsdk:"blackhole"`
}

func (r *routeResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_route"
}

func (r *routeResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A kernel route in the host's main table: `destination` via `gateway`, or a blackhole. The gateway changes in " +
			"place (`ip route replace`); Delete removes the route only while it still has this gateway. Read reports a removed or " +
			"retargeted route. Import with the destination CIDR.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The destination.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"destination": schema.StringAttribute{Required: true, Description: "Destination network CIDR (IPv4 or IPv6).",
				Validators: []validator.String{cidrCheck}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"gateway": schema.StringAttribute{Optional: true, Description: "Next hop, of the destination's family. Required unless `blackhole`."},
			"blackhole": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Drop traffic to the destination instead."},
		},
	}
}

func (m routeModel) route() host.Route {
	return host.Route{Destination: m.Destination, Gateway: str(m.Gateway), Blackhole: m.Blackhole}
}

func (r *routeResource) apply(ctx context.Context, m *routeModel) error {
	h, err := r.c.host(ctx)
	if err != nil {
		return err
	}
	m.ID = types.StringValue(m.Destination)
	return h.ApplyRoute(ctx, m.route())
}

// summary names the route in a diagnostic.
func (m routeModel) summary() string { return "lbhost_route " + m.Destination }

func (r *routeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, routeModel.summary, func(m *routeModel) error { return r.apply(ctx, m) })
}

// Update replaces the route's gateway in place (Create's write).
func (r *routeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, routeModel.summary, func(m *routeModel) error { return r.apply(ctx, m) })
}

func (r *routeResource) read(ctx context.Context, dest string) (*routeModel, error) {
	h, err := r.c.host(ctx)
	if err != nil {
		return nil, err
	}
	rt, err := h.ReadRoute(ctx, dest)
	if err != nil || rt == nil {
		return nil, err
	}
	return &routeModel{ID: types.StringValue(dest), Destination: dest, Gateway: ptr(rt.Gateway), Blackhole: rt.Blackhole}, nil
}

func (r *routeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, ok := readPrior[routeModel](ctx, req, resp)
	if !ok {
		return
	}
	got, err := r.read(ctx, m.Destination)
	if keptUnreachable(&resp.Diagnostics, m.summary(), err) {
		return
	}
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	if got == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, got)...)
}

// Delete removes the route while it still has this gateway.
func (r *routeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteHosted(ctx, r.c, req, resp, routeModel.summary, func(h *host.Host, m routeModel) error { return h.DeleteRoute(ctx, m.route()) })
}

func (r *routeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	got, err := r.read(ctx, req.ID)
	if err != nil {
		addError(&resp.Diagnostics, "import lbhost_route "+req.ID, err)
		return
	}
	if got == nil {
		resp.Diagnostics.AddError("import lbhost_route "+req.ID, fmt.Sprintf("no route to %s on the host", req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, got)...)
}
