// The lbhost_l4_frontend resource: its schema, model, conversions to the
// host's l4.Config, and the SCTP check at plan.

package tfprovider

import (
	"context"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/l4"
	"github.com/tfccm/tfccm/lbhost/router"
)

type l4FrontendResource struct {
	namedResource[l4Model, l4.Config]
}

var (
	_ resource.ResourceWithModifyPlan  = (*l4FrontendResource)(nil)
	_ resource.ResourceWithImportState = (*l4FrontendResource)(nil)
)

func newL4FrontendResource() resource.Resource { return &l4FrontendResource{l4Object.resource()} }

type l4Model struct {
	namedFields
	Ports       []l4PortModel `tfsdk:"ports"`
	HealthCheck l4CheckModel  `tfsdk:"health_check"`
	SNAT        bool          `tfsdk:"snat"`
}

type l4PortModel struct {
	Protocol string `tfsdk:"protocol"`
	Port     int64  `tfsdk:"port"`
	NodePort int64  `tfsdk:"node_port"`
}

type l4CheckModel struct {
	Protocol   string  `tfsdk:"protocol"`
	Port       int64   `tfsdk:"port"`
	Path       *string `tfsdk:"path"`
	IntervalMS int64   `tfsdk:"interval_ms"`
	Rise       int64   `tfsdk:"rise"`
	Fall       int64   `tfsdk:"fall"`
}

var l4NameCheck = stringCheck{desc: "1-100 lowercase letters, digits, '_', '.' or '-', starting with a letter or digit", ok: l4.ValidName}

func (r *l4FrontendResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_l4_frontend"
}

func (r *l4FrontendResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A layer-4 load balancer on the host: the host's `lbhost-router -l4 <config_dir>/l4` health-checks every backend " +
			"and keeps nftables table `" + l4.NftTable + "` destination-NATting `address:port` (TCP, UDP or SCTP) to the healthy " +
			"backends' `node_port`, spread per connection (`numgen`) or by client address (`jhash`, ClientIP affinity); conntrack " +
			"keeps each connection on its backend. Packets are forwarded, not proxied: backends see the client's own address unless " +
			"`snat` is on, and replies must come back through the host. Written as `l4/<name>.json`; apply waits until the router " +
			"has loaded it. Every argument but `name` changes in place. Read reports an edited or removed config and a table the " +
			"router has not loaded (as forwarding no port: an update, and a destroy still removes the config). SCTP ports are refused (at plan) on a host whose kernel lacks SCTP. Import with the name.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The name.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true, Description: "Name of the load balancer on the host (config file and nftables chain).",
				Validators: []validator.String{l4NameCheck}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"address": schema.StringAttribute{Required: true, Description: "The IPv4 address (VIP) the ports listen on.",
				Validators: []validator.String{ipv4Check}},
			"ports": schema.ListNestedAttribute{Required: true, Description: "Listening ports and the backends' port for each.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"protocol": schema.StringAttribute{Required: true, Description: "`TCP`, `UDP` or `SCTP`.",
						Validators: []validator.String{oneOf(l4.Protocols...)}},
					"port":      schema.Int64Attribute{Required: true, Description: "Port the load balancer listens on.", Validators: []validator.Int64{portRange}},
					"node_port": schema.Int64Attribute{Required: true, Description: "Port of every backend (the Service's NodePort).", Validators: []validator.Int64{portRange}},
				}}},
			"backends": schema.ListNestedAttribute{Optional: true, Description: "The backends (Kubernetes nodes).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Required: true, Description: "Backend name (the node name).", Validators: []validator.String{serverCheck}},
					"address": schema.StringAttribute{Required: true, Description: "The node's IPv4 address.", Validators: []validator.String{ipv4Check}},
				}}},
			"health_check": schema.SingleNestedAttribute{Required: true,
				Description: "How every backend is checked (a backend failing `fall` checks in a row gets no new connections).",
				Attributes: map[string]schema.Attribute{
					"protocol": schema.StringAttribute{Required: true, Description: "`HTTP`, `HTTPS` (GET expecting 200) or `TCP` (connect).",
						Validators: []validator.String{oneOf("TCP", "HTTP", "HTTPS")}},
					"port": schema.Int64Attribute{Required: true, Description: "Port checked on every backend (kube-proxy's 10256 or the Service's healthCheckNodePort).",
						Validators: []validator.Int64{portRange}},
					"path": schema.StringAttribute{Optional: true, Description: "URL path for HTTP(S), e.g. `/healthz`.", Validators: []validator.String{hcPathCheck}},
					"interval_ms": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1000),
						Description: "Milliseconds between checks of a backend.", Validators: []validator.Int64{int64Range{100, 60000}}},
					"rise": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
						Description: "Successes before a down backend gets connections again (a new one after its first).", Validators: []validator.Int64{int64Range{1, 100}}},
					"fall": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
						Description: "Failures before a backend gets no new connections.", Validators: []validator.Int64{int64Range{1, 100}}},
				}},
			"source_ranges": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Description: "Client IPv4 CIDRs allowed to connect; others are dropped. Unset: everyone.",
				Validators:  []validator.List{eachString{cidrCheck}}},
			"session_affinity": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(l4.AffinityNone),
				Description: "`None` (each connection to a random healthy backend) or `ClientIP` (by client address).",
				Validators:  []validator.String{oneOf(l4.AffinityNone, l4.AffinityClientIP)}},
			"snat": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Rewrite the source of forwarded connections to `address` (the VIP), for backends whose replies would not come back through this host: they go to the VIP, so to whichever host holds it (with conntrackd syncing connection state between VRRP peers, connections survive a failover). Backends then see the VIP, not the client. Default false."},
		},
	}
}

func (m l4Model) config() l4.Config {
	c := l4.Config{Name: m.Name, Address: m.Address, SourceRanges: m.SourceRanges, Affinity: m.SessionAffinity, SNAT: m.SNAT,
		Check: router.Check{Protocol: m.HealthCheck.Protocol, Port: int(m.HealthCheck.Port), Path: str(m.HealthCheck.Path),
			IntervalMS: int(m.HealthCheck.IntervalMS), Rise: int(m.HealthCheck.Rise), Fall: int(m.HealthCheck.Fall)}}
	for _, p := range m.Ports {
		c.Ports = append(c.Ports, l4.Port{Protocol: p.Protocol, Port: int(p.Port), NodePort: int(p.NodePort)})
	}
	for _, b := range m.Backends {
		c.Backends = append(c.Backends, l4.Backend{Name: b.Name, Address: b.Address})
	}
	c.SourceRanges = nilIfEmpty(c.SourceRanges)
	return c
}

func l4FromConfig(c l4.Config) l4Model {
	m := l4Model{SNAT: c.SNAT,
		namedFields: namedFields{ID: types.StringValue(c.Name), Name: c.Name, Address: c.Address, SourceRanges: c.SourceRanges, SessionAffinity: c.Affinity},
		HealthCheck: l4CheckModel{Protocol: c.Check.Protocol, Port: int64(c.Check.Port), Path: ptr(c.Check.Path),
			IntervalMS: int64(c.Check.IntervalMS), Rise: int64(c.Check.Rise), Fall: int64(c.Check.Fall)}}
	for _, p := range c.Ports {
		m.Ports = append(m.Ports, l4PortModel{Protocol: p.Protocol, Port: int64(p.Port), NodePort: int64(p.NodePort)})
	}
	for _, b := range c.Backends {
		m.Backends = append(m.Backends, backendModel{Name: b.Name, Address: b.Address})
	}
	return m
}

// sameL4 compares what two configs put on the host (null and empty lists
// alike).
func sameL4(a, b l4.Config) bool {
	norm := func(c l4.Config) l4.Config {
		c.Backends, c.SourceRanges = nilIfEmpty(c.Backends), nilIfEmpty(c.SourceRanges)
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// ModifyPlan refuses SCTP ports at plan time on a host without SCTP.
func (r *l4FrontendResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.c == nil || r.c.unknown {
		return
	}
	var ports types.List
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("ports"), &ports)...)
	if resp.Diagnostics.HasError() || ports.IsUnknown() || ports.IsNull() {
		return
	}
	var ps []struct {
		Protocol types.String `tfsdk:"protocol"`
		Port     types.Int64  `tfsdk:"port"`
		NodePort types.Int64  `tfsdk:"node_port"`
	}
	if d := ports.ElementsAs(ctx, &ps, false); d.HasError() {
		return
	}
	var c l4.Config
	for _, p := range ps {
		c.Ports = append(c.Ports, l4.Port{Protocol: p.Protocol.ValueString()})
	}
	h, err := r.c.host(ctx)
	if keptUnreachable(&resp.Diagnostics, "lbhost_l4_frontend", err) {
		return // checked when the host is back
	}
	if err == nil {
		err = h.CheckL4(ctx, c)
	}
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_l4_frontend", err)
	}
}

// l4Object declares lbhost_l4_frontend as one object on the host; a
// config written but not loaded by the router in time is a partial
// failure (recorded: the next apply checks again).
var l4Object = namedObject[l4Model, l4.Config]{
	typeName: "lbhost_l4_frontend", what: "layer-4 load balancer", shared: (*l4Model).sharedFields,
	noPorts: func(m *l4Model) { m.Ports = []l4PortModel{} },
	toHost:  l4Model.config, fromHost: l4FromConfig, same: sameL4,
	apply: (*host.Host).ApplyL4, read: (*host.Host).ReadL4, remove: (*host.Host).DeleteL4,
}
