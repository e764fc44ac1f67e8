// The lbhost_bgp_announcement resource: one load balancer's address,
// announced by the host while its frontend serves it.

package tfprovider

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/announce"
	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/router"
)

type bgpAnnouncementResource struct{ connected }

func newBGPAnnouncementResource() resource.Resource { return &bgpAnnouncementResource{} }

type bgpAnnouncementModel struct {
	ID          types.String      `tfsdk:"id"`
	Owner       types.String      `tfsdk:"owner"`
	Address     types.String      `tfsdk:"address"`
	Ports       []int64           `tfsdk:"ports"`
	Backends    []string          `tfsdk:"backends"`
	HealthCheck *routedCheckModel `tfsdk:"health_check"`
	DrainMS     types.Int64       `tfsdk:"drain_ms"`
}

func (r *bgpAnnouncementResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_bgp_announcement"
}

func (r *bgpAnnouncementResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A load balancer's address announced over BGP by the host (`lbhost_bgp_speaker`): the config file " +
			"`config_dir/bgp/<owner>.json` of the host's announcer (`lbhost-router -announce config_dir/bgp`), which keeps the address " +
			"local to the host and, while something listens on every one of `ports` at it (the frontend) and one of `backends` passes " +
			"`health_check`, a kernel route to it that bgpd announces; it removes the route (bgpd withdraws it) within ~200 ms of a failure, " +
			"the address staying local so connections in flight finish. Everything " +
			"changes in place. Destroy removes the file, waits until the address is withdrawn, then `drain_ms` for the routers to converge, so a " +
			"frontend destroyed after it (one it depends on) gets no new connection once gone.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The owner.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"owner": schema.StringAttribute{Required: true, Description: "The load balancer owning the announcement (its file's name).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"address": schema.StringAttribute{Required: true, Description: "The address (IPv4: a /32, IPv6: a /128), inside a pool of the host's speaker."},
			"ports": schema.ListAttribute{Required: true, ElementType: types.Int64Type,
				Description: "The frontend's TCP ports at `address`: announced only while something listens on every one."},
			"backends": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Description: "Backend addresses checked with `health_check`: announced only while one passes. None: only the frontend is checked."},
			"health_check": schema.SingleNestedAttribute{Optional: true, Description: "How every backend is checked (as `lbhost_routed_vip`'s).",
				Attributes: map[string]schema.Attribute{
					"protocol": schema.StringAttribute{Required: true, Description: "`HTTP`, `HTTPS` (GET expecting 200) or `TCP` (connect)."},
					"port":     schema.Int64Attribute{Required: true, Description: "Port checked on every backend."},
					"path":     schema.StringAttribute{Optional: true, Description: "URL path for HTTP(S)."},
					"interval_ms": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1000),
						Description: "Milliseconds between checks of a backend."},
					"rise": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2), Description: "Successes before a down backend counts again."},
					"fall": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2), Description: "Failures before a backend is down."},
				}},
			"drain_ms": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1000),
				Description: "Milliseconds destroy waits after the address is withdrawn, for the routers to converge."},
		},
	}
}

func (m bgpAnnouncementModel) config() announce.Config {
	c := announce.Config{Owner: m.Owner.ValueString(), Address: m.Address.ValueString(), Backends: slices.Clone(m.Backends)}
	for _, p := range m.Ports {
		c.Ports = append(c.Ports, int(p))
	}
	if hc := m.HealthCheck; hc != nil {
		c.Check = router.Check{Protocol: hc.Protocol, Port: int(hc.Port), Path: hc.Path.ValueString(),
			IntervalMS: int(hc.IntervalMS.ValueInt64()), Rise: int(hc.Rise.ValueInt64()), Fall: int(hc.Fall.ValueInt64())}
	}
	return c
}

func (m bgpAnnouncementModel) summary() string {
	return "lbhost_bgp_announcement " + m.Owner.ValueString()
}

func (r *bgpAnnouncementResource) write(ctx context.Context, m *bgpAnnouncementModel) error {
	h, err := r.c.host(ctx)
	if err != nil {
		return err
	}
	if err := h.ApplyAnnouncement(ctx, m.config()); err != nil {
		return err
	}
	m.ID = m.Owner
	return nil
}

func (r *bgpAnnouncementResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, bgpAnnouncementModel.summary, func(m *bgpAnnouncementModel) error { return r.write(ctx, m) })
}

func (r *bgpAnnouncementResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, bgpAnnouncementModel.summary, func(m *bgpAnnouncementModel) error { return r.write(ctx, m) })
}

// Read reports the announcement as the host has it: gone, it is gone
// from state (and created again); changed, the next plan updates it.
func (r *bgpAnnouncementResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, ok := readPrior[bgpAnnouncementModel](ctx, req, resp)
	if !ok {
		return
	}
	st := readHosted(ctx, r.c, resp, m.summary(), func(h *host.Host) (*host.AnnouncementState, error) {
		return h.ReadAnnouncement(ctx, m.Owner.ValueString())
	}, func() diag.Diagnostics {
		inert := m
		inert.Ports = []int64{} // unreadable: rewritten by the next apply
		return resp.State.Set(ctx, &inert)
	})
	if st == nil {
		return // gone (removed from state), unreachable (kept) or drifted (inert)
	}
	c := st.Config
	m.Address = types.StringValue(c.Address)
	m.Ports = nil
	for _, p := range c.Ports {
		m.Ports = append(m.Ports, int64(p))
	}
	if len(c.Backends) > 0 || m.Backends != nil {
		m.Backends = c.Backends
	}
	if m.HealthCheck != nil || len(c.Backends) > 0 {
		if m.HealthCheck == nil {
			m.HealthCheck = &routedCheckModel{Path: types.StringNull()}
		}
		m.HealthCheck.Protocol, m.HealthCheck.Port = c.Check.Protocol, int64(c.Check.Port)
		if c.Check.Path != "" || !m.HealthCheck.Path.IsNull() {
			m.HealthCheck.Path = types.StringValue(c.Check.Path)
		}
		m.HealthCheck.IntervalMS = types.Int64Value(int64(c.Check.IntervalMS))
		m.HealthCheck.Rise, m.HealthCheck.Fall = types.Int64Value(int64(c.Check.Rise)), types.Int64Value(int64(c.Check.Fall))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *bgpAnnouncementResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteHosted(ctx, r.c, req, resp, bgpAnnouncementModel.summary, func(h *host.Host, m bgpAnnouncementModel) error {
		return h.DeleteAnnouncement(ctx, m.Owner.ValueString(), 5*time.Second, time.Duration(m.DrainMS.ValueInt64())*time.Millisecond)
	})
}
