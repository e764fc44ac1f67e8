// The lbhost_frontend resource: its schema, model and conversions to the
// host's haproxy.Frontend.

package tfprovider

import (
	"context"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/host"
)

type frontendResource struct {
	namedResource[frontendModel, haproxy.Frontend]
}

var _ resource.ResourceWithImportState = (*frontendResource)(nil)

func newFrontendResource() resource.Resource { return &frontendResource{frontendObject.resource()} }

type frontendModel struct {
	namedFields
	Ports         []portModel      `tfsdk:"ports"`
	HealthCheck   healthCheckModel `tfsdk:"health_check"`
	ProxyProtocol *string          `tfsdk:"proxy_protocol"`
	Timeouts      *timeoutsModel   `tfsdk:"timeouts"`
}

type portModel struct {
	Port     int64 `tfsdk:"port"`
	NodePort int64 `tfsdk:"node_port"`
}

type backendModel struct {
	Name    string `tfsdk:"name"`
	Address string `tfsdk:"address"`
}

type healthCheckModel struct {
	Protocol string  `tfsdk:"protocol"`
	Port     *int64  `tfsdk:"port"`
	Path     *string `tfsdk:"path"`
	Interval string  `tfsdk:"interval"`
	Rise     int64   `tfsdk:"rise"`
	Fall     int64   `tfsdk:"fall"`
}

type timeoutsModel struct {
	Connect *string `tfsdk:"connect"`
	Client  *string `tfsdk:"client"`
	Server  *string `tfsdk:"server"`
}

var healthCheckTypes = map[string]attr.Type{
	"protocol": types.StringType, "port": types.Int64Type, "path": types.StringType,
	"interval": types.StringType, "rise": types.Int64Type, "fall": types.Int64Type,
}

func (r *frontendResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_frontend"
}

func (r *frontendResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "An HAProxy load balancer on the host: for each port a TCP frontend binding `address:port` and a backend " +
			"with every entry of `backends` as a server at the port's `node_port`. Written as `fragments/<name>.cfg`, checked with " +
			"`haproxy -c` before a graceful reload (a rejected configuration is rolled back: the running load balancer never changes). " +
			"Every argument but `name` changes in place. Read parses the fragment on the host, so an edited or removed fragment is a diff; one that cannot be parsed or that HAProxy has not loaded reads as serving no port (an update, and a destroy still removes it). " +
			"Import with the name: `tofu import lbhost_frontend.x <name>`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, Description: "The name.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true, Description: "Name of the load balancer on the host (fragment file and HAProxy proxy names).",
				Validators:    []validator.String{nameCheck},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"address": schema.StringAttribute{
				Required: true, Description: "The IPv4 or IPv6 address (VIP) every port binds (an IPv6 one as `[address]:port`).", Validators: []validator.String{ipCheck},
			},
			"ports": schema.ListNestedAttribute{
				Required: true, Description: "Listening ports and the servers' port for each.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"port":      schema.Int64Attribute{Required: true, Description: "Port the frontend listens on.", Validators: []validator.Int64{portRange}},
					"node_port": schema.Int64Attribute{Required: true, Description: "Port of every server (the Service's NodePort).", Validators: []validator.Int64{portRange}},
				}},
			},
			"backends": schema.ListNestedAttribute{
				Optional: true, Description: "The servers (Kubernetes nodes). Adding one is an in-place update that adds one server to every port's backend.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Required: true, Description: "Server name (the node name).", Validators: []validator.String{serverCheck}},
					"address": schema.StringAttribute{Required: true, Description: "The node's IPv4 or IPv6 address (of either family, whatever the VIP's: HAProxy proxies connections).", Validators: []validator.String{ipCheck}},
				}},
			},
			"health_check": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				Description: "How every server is checked. Health state survives a reload only for servers whose address, port and check are unchanged.",
				Default: objectdefault.StaticValue(types.ObjectValueMust(healthCheckTypes, map[string]attr.Value{
					"protocol": types.StringValue("TCP"), "port": types.Int64Null(), "path": types.StringNull(),
					"interval": types.StringValue("1s"), "rise": types.Int64Value(2), "fall": types.Int64Value(2),
				})),
				Attributes: map[string]schema.Attribute{
					"protocol": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("TCP"),
						Description: "`TCP` (connect), `HTTP` or `HTTPS` (GET `path`, expect 200).", Validators: []validator.String{oneOf("TCP", "HTTP", "HTTPS")}},
					"port": schema.Int64Attribute{Optional: true, Description: "Port to check (e.g. kube-proxy's 10256 or the Service's healthCheckNodePort). Default: the server's port.",
						Validators: []validator.Int64{portRange}},
					"path": schema.StringAttribute{Optional: true, Description: "HTTP(S) path, e.g. `/healthz`.", Validators: []validator.String{hcPathCheck}},
					"interval": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("1s"),
						Description: "Time between checks (HAProxy time).", Validators: []validator.String{timeCheck}},
					"rise": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
						Description: "Successes before a server is up.", Validators: []validator.Int64{int64Range{1, 100}}},
					"fall": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
						Description: "Failures before a server is down.", Validators: []validator.Int64{int64Range{1, 100}}},
				},
			},
			"source_ranges": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				Description: "Client CIDRs allowed to connect; others are rejected. Unset: everyone.",
				Validators:  []validator.List{eachString{cidrCheck}},
			},
			"proxy_protocol": schema.StringAttribute{
				Optional: true, Description: "Send a PROXY protocol header to the servers: `v1` or `v2`. Unset: none.",
				Validators: []validator.String{oneOf("v1", "v2")},
			},
			"session_affinity": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("None"),
				Description: "`None` (round robin) or `ClientIP` (balance by source address).",
				Validators:  []validator.String{oneOf("None", "ClientIP")},
			},
			"timeouts": schema.SingleNestedAttribute{
				Optional: true, Description: "HAProxy timeouts; unset ones come from the host's defaults section.",
				Attributes: map[string]schema.Attribute{
					"connect": schema.StringAttribute{Optional: true, Description: "timeout connect (to a server).", Validators: []validator.String{timeCheck}},
					"client":  schema.StringAttribute{Optional: true, Description: "timeout client (idle client side).", Validators: []validator.String{timeCheck}},
					"server":  schema.StringAttribute{Optional: true, Description: "timeout server (idle server side).", Validators: []validator.String{timeCheck}},
				},
			},
		},
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// toFrontend converts the model into the host's type.
func (m frontendModel) toFrontend() haproxy.Frontend {
	f := haproxy.Frontend{
		Name: m.Name, Address: m.Address, SourceRanges: m.SourceRanges,
		ProxyProtocol: str(m.ProxyProtocol), SessionAffinity: m.SessionAffinity,
		HealthCheck: haproxy.HealthCheck{
			Protocol: m.HealthCheck.Protocol, Path: str(m.HealthCheck.Path), Interval: m.HealthCheck.Interval,
			Rise: int(m.HealthCheck.Rise), Fall: int(m.HealthCheck.Fall),
		},
	}
	if m.HealthCheck.Port != nil {
		f.HealthCheck.Port = int(*m.HealthCheck.Port)
	}
	for _, p := range m.Ports {
		f.Ports = append(f.Ports, haproxy.Port{Port: int(p.Port), NodePort: int(p.NodePort)})
	}
	for _, b := range m.Backends {
		f.Backends = append(f.Backends, haproxy.Backend{Name: b.Name, Address: b.Address})
	}
	if m.Timeouts != nil {
		f.Timeouts = haproxy.Timeouts{Connect: str(m.Timeouts.Connect), Client: str(m.Timeouts.Client), Server: str(m.Timeouts.Server)}
	}
	return f
}

// fromFrontend is the model of what is on the host; empty lists and unset
// values are null.
func fromFrontend(f haproxy.Frontend) frontendModel {
	m := frontendModel{
		namedFields:   namedFields{ID: types.StringValue(f.Name), Name: f.Name, Address: f.Address, SessionAffinity: f.SessionAffinity},
		ProxyProtocol: ptr(f.ProxyProtocol),
		HealthCheck: healthCheckModel{Protocol: f.HealthCheck.Protocol, Path: ptr(f.HealthCheck.Path), Interval: f.HealthCheck.Interval,
			Rise: int64(f.HealthCheck.Rise), Fall: int64(f.HealthCheck.Fall)},
	}
	if m.SessionAffinity == "" {
		m.SessionAffinity = "None"
	}
	if f.HealthCheck.Port != 0 {
		p := int64(f.HealthCheck.Port)
		m.HealthCheck.Port = &p
	}
	for _, p := range f.Ports {
		m.Ports = append(m.Ports, portModel{Port: int64(p.Port), NodePort: int64(p.NodePort)})
	}
	for _, b := range f.Backends {
		m.Backends = append(m.Backends, backendModel{Name: b.Name, Address: b.Address})
	}
	if len(f.SourceRanges) > 0 {
		m.SourceRanges = f.SourceRanges
	}
	if f.Timeouts != (haproxy.Timeouts{}) {
		m.Timeouts = &timeoutsModel{Connect: ptr(f.Timeouts.Connect), Client: ptr(f.Timeouts.Client), Server: ptr(f.Timeouts.Server)}
	}
	return m
}

// sameFrontend compares what two models put on the host (null and empty
// lists alike).
func sameFrontend(a, b haproxy.Frontend) bool {
	norm := func(f haproxy.Frontend) haproxy.Frontend {
		f.SourceRanges, f.Backends = nilIfEmpty(f.SourceRanges), nilIfEmpty(f.Backends)
		if f.SessionAffinity == "" {
			f.SessionAffinity = "None"
		}
		if f.HealthCheck.Protocol == "" {
			f.HealthCheck.Protocol = "TCP"
		}
		return f
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// frontendObject declares lbhost_frontend as one object on the host.
var frontendObject = namedObject[frontendModel, haproxy.Frontend]{
	typeName: "lbhost_frontend", what: "load balancer", shared: (*frontendModel).sharedFields,
	noPorts: func(m *frontendModel) { m.Ports = []portModel{} },
	toHost:  frontendModel.toFrontend, fromHost: fromFrontend, same: sameFrontend,
	apply: (*host.Host).ApplyFrontend, read: (*host.Host).ReadFrontend, remove: (*host.Host).DeleteFrontend,
}
