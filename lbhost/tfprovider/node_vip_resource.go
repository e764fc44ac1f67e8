// The lbhost_node_vip resource: node mode's NodeVIP object, applied once the agents announce it.

package tfprovider

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/tfccm/tfccm/nodelb/announce"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

type nodeVIPResource struct{ connected }

func newNodeVIPResource() resource.Resource { return &nodeVIPResource{} }

type nodeVIPModel struct {
	ID                    types.String        `tfsdk:"id"`
	Name                  types.String        `tfsdk:"name"`
	Address               types.String        `tfsdk:"address"`
	Service               nodeVIPServiceModel `tfsdk:"service"`
	Ports                 []nodeVIPPortModel  `tfsdk:"ports"`
	ExternalTrafficPolicy types.String        `tfsdk:"external_traffic_policy"`
	Nodes                 []string            `tfsdk:"nodes"`
	Interface             types.String        `tfsdk:"interface"`
	Announcement          types.String        `tfsdk:"announcement"`
	WaitTimeout           types.String        `tfsdk:"wait_timeout"`
	Holder                types.String        `tfsdk:"holder"`
	Standby               types.Bool          `tfsdk:"standby"`
	Announce              types.String        `tfsdk:"announce"`
	Announcers            types.List          `tfsdk:"announcers"`
}

type nodeVIPServiceModel struct {
	Namespace string       `tfsdk:"namespace"`
	Name      string       `tfsdk:"name"`
	UID       types.String `tfsdk:"uid"`
}

type nodeVIPPortModel struct {
	Protocol string `tfsdk:"protocol"`
	Port     int64  `tfsdk:"port"`
}

func (r *nodeVIPResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node_vip"
}

func (r *nodeVIPResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Node mode (a provider with `kubernetes`): one load balancer address served by the cluster's own nodes. It is a NodeVIP " +
			"object in the provider's namespace; tfccm's node agents (the chart's DaemonSet) pick one holder among `nodes` (Ready, not cordoned, " +
			"agent alive, and with `external_traffic_policy = \"Local\"` a ready endpoint), put the address on its interface and announce it " +
			"(`announcement`); kube-proxy there serves the Service (ingress `ip_mode = \"VIP\"`). Apply returns once an agent reports the " +
			"address announced, and fails with the agents' reason (no eligible node, an address outside the nodes' networks, an agent that " +
			"cannot announce) after `wait_timeout`, or at once for an address no node can hold. With `external_traffic_policy = \"Local\"` and no " +
			"ready endpoint of the Service on any node (reason `NoLocalEndpoint`) it returns at once with no holder: the agents hold the " +
			"address once an endpoint is ready. Read reports the object as it is; " +
			"`holder` is where the address is now. Everything but `name` changes in place.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "`<namespace>/<name>` of the NodeVIP object.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true, Description: "The NodeVIP object's name (a DNS label; tfccm's template derives it from the Service's UID).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}, Validators: []validator.String{dnsLabelCheck}},
			"address": schema.StringAttribute{Required: true, Description: "The VIP, an IPv4 or IPv6 address in canonical form (tfccm's address pools pick it).",
				Validators: []validator.String{ipCheck}},
			"service": schema.SingleNestedAttribute{Required: true, Description: "The Service the address serves.",
				Attributes: map[string]schema.Attribute{
					"namespace": schema.StringAttribute{Required: true, Description: "Its namespace."},
					"name":      schema.StringAttribute{Required: true, Description: "Its name."},
					"uid":       schema.StringAttribute{Optional: true, Description: "Its UID."},
				}},
			"ports": schema.ListNestedAttribute{Optional: true, Description: "The Service's ports, shown in plans and on the object (kube-proxy on the holder serves them).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"protocol": schema.StringAttribute{Required: true, Description: "TCP, UDP or SCTP.", Validators: []validator.String{oneOf("TCP", "UDP", "SCTP")}},
					"port":     schema.Int64Attribute{Required: true, Description: "The port, 1-65535.", Validators: []validator.Int64{int64Range{1, 65535}}},
				}}},
			"external_traffic_policy": schema.StringAttribute{Required: true, Description: "`Cluster` (any eligible node may hold the address) or `Local` (only nodes with a ready endpoint of the Service: client addresses are kept).",
				Validators: []validator.String{oneOf(vipapi.PolicyCluster, vipapi.PolicyLocal)}},
			"nodes":        schema.ListAttribute{Required: true, ElementType: types.StringType, Description: "The nodes that may hold the address (the template's node selector applied to the cluster's nodes). Empty: no node may, and apply fails saying so."},
			"interface":    schema.StringAttribute{Optional: true, Description: "The interface the address goes on; default the holder's interface whose network contains it.", Validators: []validator.String{ifaceCheck}},
			"announcement": schema.StringAttribute{Computed: true, Description: "How the holder announces the address: `gratuitous ARP` (IPv4) or `unsolicited neighbor advertisement` (IPv6). Known at plan."},
			"wait_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("30s"),
				Description: "How long apply waits for the agents to announce the address (a Go duration). Default `30s`."},
			"holder": schema.StringAttribute{Computed: true, Description: "The node holding the address, as the agents last reported it."},
			"announce": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(vipapi.AnnounceL2),
				Validators: []validator.String{oneOf(vipapi.AnnounceL2, vipapi.AnnounceBGP)},
				Description: "`l2` (default): one holder answers ARP/NDP for the address. `bgp`: every eligible node (Ready, not cordoned, " +
					"agent alive, and with `external_traffic_policy = \"Local\"` a ready endpoint) announces a route to it to the peers of the " +
					"cluster's `lbhost_node_bgp`, through its own FRR; the routers spread flows over them by ECMP, and a node that stops " +
					"being eligible withdraws. Apply returns once at least one node announces. Changes in place."},
			"announcers": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				Description: "With `announce = \"bgp\"`: the nodes announcing the address, as the agents last reported them."},
			"standby": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Write the object without any node holding the address, while another speaker still announces it (a migration " +
					"from MetalLB): the agents report it not announced, reason `Standby`, and apply returns without waiting. Changes in " +
					"place: `false` has the agents hold and announce it (apply waits for that as on create), `true` releases it. An " +
					"address shared by several objects is held unless all of them are on standby."},
		},
	}
}

// ModifyPlan makes the announcement known at plan: it follows from the
// address's family.
func (r *nodeVIPResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var addr, mode types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("address"), &addr)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("announce"), &mode)...)
	if mode.ValueString() == vipapi.AnnounceBGP {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("announcement"), announcementBGP)...)
		return
	}
	if a, err := netip.ParseAddr(addr.ValueString()); err == nil && !addr.IsUnknown() && !mode.IsUnknown() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("announcement"), announce.Method(a))...)
	}
}

// announcementBGP is the announcement of a NodeVIP announced over BGP.
const announcementBGP = "BGP"

// client is the provider's cluster connection, scoped to its namespace.
func (r *nodeVIPResource) client() (dynamic.ResourceInterface, string, error) {
	return nodeVIPClient(r.c, "lbhost_node_vip")
}

// nodeVIPClient is the NodeVIP objects of c's kubernetes namespace, for
// what (a resource or data source type, named in the error).
func nodeVIPClient(c *conn, what string) (dynamic.ResourceInterface, string, error) {
	if c == nil || c.kube == nil {
		return nil, "", fmt.Errorf("%s needs a provider with `kubernetes` (node mode)", what)
	}
	dyn, err := c.kube.client()
	if err != nil {
		return nil, "", err
	}
	ns := c.kube.cfg.Namespace.ValueString()
	return dyn.Resource(vipapi.GVR).Namespace(ns), ns, nil
}

// spec is the object's spec from m.
func (m *nodeVIPModel) spec() vipapi.NodeVIPSpec {
	s := vipapi.NodeVIPSpec{
		Address:               m.Address.ValueString(),
		Service:               vipapi.ServiceRef{Namespace: m.Service.Namespace, Name: m.Service.Name, UID: m.Service.UID.ValueString()},
		ExternalTrafficPolicy: m.ExternalTrafficPolicy.ValueString(),
		Nodes:                 append([]string(nil), m.Nodes...),
		Interface:             m.Interface.ValueString(),
		Standby:               m.Standby.ValueBool(),
	}
	if m.Announce.ValueString() == vipapi.AnnounceBGP {
		// l2 stays "" on the object: objects written before BGP mode
		// existed do not change.
		s.Announce = vipapi.AnnounceBGP
	}
	for _, p := range m.Ports {
		s.Ports = append(s.Ports, vipapi.Port{Protocol: p.Protocol, Port: int32(p.Port)})
	}
	return s
}

// fromObject sets m from the object v.
func (m *nodeVIPModel) fromObject(v *vipapi.NodeVIP) {
	m.ID = types.StringValue(v.Namespace + "/" + v.Name)
	m.Name = types.StringValue(v.Name)
	m.Address = types.StringValue(v.Spec.Address)
	m.Service = nodeVIPServiceModel{Namespace: v.Spec.Service.Namespace, Name: v.Spec.Service.Name, UID: optString(v.Spec.Service.UID)}
	m.Ports = nil
	for _, p := range v.Spec.Ports {
		m.Ports = append(m.Ports, nodeVIPPortModel{Protocol: p.Protocol, Port: int64(p.Port)})
	}
	m.ExternalTrafficPolicy = types.StringValue(v.Spec.ExternalTrafficPolicy)
	m.Nodes = append([]string{}, v.Spec.Nodes...)
	m.Interface = optString(v.Spec.Interface)
	if a, err := netip.ParseAddr(v.Spec.Address); err == nil {
		m.Announcement = types.StringValue(announce.Method(a))
	}
	m.Announce = types.StringValue(vipapi.AnnounceL2)
	if v.Spec.BGP() {
		m.Announce = types.StringValue(vipapi.AnnounceBGP)
		m.Announcement = types.StringValue(announcementBGP)
	}
	m.Announcers = stringList(v.Status.Announcers)
	m.Holder = types.StringValue(v.Status.Holder)
	m.Standby = types.BoolValue(v.Spec.Standby)
	if m.WaitTimeout.IsNull() || m.WaitTimeout.IsUnknown() {
		m.WaitTimeout = types.StringValue("30s")
	}
}

// stringList is ss as a list value (empty, not null, when none).
func stringList(ss []string) types.List {
	vals := make([]attr.Value, len(ss))
	for i, s := range ss {
		vals[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vals)
}

func optString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// planned reads the plan into a model and connects; ok false when either failed.
func (r *nodeVIPResource) planned(ctx context.Context, plan tfsdk.Plan, diags *diag.Diagnostics) (m nodeVIPModel, cl dynamic.ResourceInterface, ns string, ok bool) {
	diags.Append(plan.Get(ctx, &m)...)
	if diags.HasError() {
		return m, nil, "", false
	}
	cl, ns, err := r.client()
	if err != nil {
		diags.AddError("lbhost_node_vip: connect", err.Error())
		return m, nil, "", false
	}
	return m, cl, ns, true
}

func (r *nodeVIPResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	m, cl, ns, ok := r.planned(ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	u, err := vipapi.ToUnstructured(&vipapi.NodeVIP{ObjectMeta: metav1.ObjectMeta{Name: m.Name.ValueString(), Namespace: ns}, Spec: m.spec()})
	if err == nil {
		u, err = cl.Create(ctx, u, metav1.CreateOptions{FieldManager: "tfccm"})
	}
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip: create", fmt.Sprintf("NodeVIP %s/%s: %v", ns, m.Name.ValueString(), err))
		return
	}
	r.settle(ctx, cl, &m, u.GetGeneration(), resp.State.Set, &resp.Diagnostics)
}

func (r *nodeVIPResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	m, cl, ns, ok := r.planned(ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	// The agents write the status meanwhile (a new resourceVersion): a
	// conflict reads the object again and writes the spec on it.
	var u *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := cl.Get(ctx, m.Name.ValueString(), metav1.GetOptions{})
		var v *vipapi.NodeVIP
		if err == nil {
			v, err = vipapi.FromUnstructured(got)
		}
		if err == nil {
			v.Spec = m.spec()
			got, err = vipapi.ToUnstructured(v)
		}
		if err == nil {
			u, err = cl.Update(ctx, got, metav1.UpdateOptions{FieldManager: "tfccm"})
		}
		return err
	})
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip: update", fmt.Sprintf("NodeVIP %s/%s: %v", ns, m.Name.ValueString(), err))
		return
	}
	r.settle(ctx, cl, &m, u.GetGeneration(), resp.State.Set, &resp.Diagnostics)
}

// settle waits until the agents report on generation gen and records m in
// state either way (the object exists: a failed wait is kept, the next
// apply resumes). It fails with the agents' reason when the address is
// not announced. On standby nothing is announced: it records the object
// as written, without waiting.
func (r *nodeVIPResource) settle(ctx context.Context, cl dynamic.ResourceInterface, m *nodeVIPModel, gen int64, set func(context.Context, any) diag.Diagnostics, diags *diag.Diagnostics) {
	if m.Standby.ValueBool() {
		var v *vipapi.NodeVIP
		u, err := cl.Get(ctx, m.Name.ValueString(), metav1.GetOptions{})
		if err == nil {
			v, err = vipapi.FromUnstructured(u)
		}
		if err == nil {
			m.fromObject(v)
		} else {
			m.ID, m.Holder = types.StringValue(m.Name.ValueString()), types.StringValue("")
			m.Announcers = stringList(nil)
		}
		diags.Append(set(ctx, m)...)
		return
	}
	timeout, err := time.ParseDuration(m.WaitTimeout.ValueString())
	if err != nil || timeout < 0 {
		timeout = 30 * time.Second
	}
	v, werr := waitAnnounced(ctx, cl, m.Name.ValueString(), gen, timeout)
	if v != nil {
		m.fromObject(v)
	} else {
		m.ID = types.StringValue(m.Name.ValueString())
		m.Holder = types.StringValue("")
		m.Announcers = stringList(nil)
	}
	diags.Append(set(ctx, m)...)
	if werr != nil {
		diags.AddError("lbhost_node_vip: "+m.Address.ValueString()+" not announced", werr.Error())
	}
}

// dnsLabelCheck: an object name tfccm's templates derive (a DNS label).
var dnsLabelCheck = stringCheck{desc: "a DNS label (1-63 lowercase letters, digits or '-')", ok: regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`).MatchString}

// Reasons that no waiting changes: the apply fails at once.
var finalReasons = map[string]bool{vipapi.ReasonOutsideNetworks: true, vipapi.ReasonInvalid: true}

// waitAnnounced polls the object until the agents report generation gen
// announced, a reason no waiting changes, or timeout. NoLocalEndpoint (a
// Local Service without a ready endpoint) is settled, not a failure: no
// node is meant to hold the address until a pod is ready, which may be
// never (scaled to zero), so the apply returns with no holder.
func waitAnnounced(ctx context.Context, cl dynamic.ResourceInterface, name string, gen int64, timeout time.Duration) (*vipapi.NodeVIP, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *vipapi.NodeVIP
	for {
		u, err := cl.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if v, cerr := vipapi.FromUnstructured(u); cerr == nil {
				last = v
				c := v.Status.Announced()
				if c != nil && c.ObservedGeneration >= gen {
					switch {
					case c.Status == metav1.ConditionTrue, c.Reason == vipapi.ReasonNoLocalEndpoint:
						return v, nil
					case finalReasons[c.Reason]:
						return v, fmt.Errorf("%s: %s", c.Reason, c.Message)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return nil, fmt.Errorf("NodeVIP %s: %v", name, err)
			}
			if c := last.Status.Announced(); c != nil && c.ObservedGeneration >= gen {
				return last, fmt.Errorf("not announced after %s: %s: %s", timeout, c.Reason, c.Message)
			}
			return last, fmt.Errorf("no node agent reported on NodeVIP %s within %s: is the chart's node agent (nodeAgent.enabled) running on the nodes the VIP lists?", name, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *nodeVIPResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, ok := readPrior[nodeVIPModel](ctx, req, resp)
	if !ok {
		return
	}
	cl, _, err := r.client()
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip: connect", err.Error())
		return
	}
	u, err := cl.Get(ctx, m.Name.ValueString(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip: read", err.Error())
		return
	}
	v, err := vipapi.FromUnstructured(u)
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip: read", err.Error())
		return
	}
	m.fromObject(v)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *nodeVIPResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m nodeVIPModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cl, ns, err := r.client()
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_vip: connect", err.Error())
		return
	}
	if err := cl.Delete(ctx, m.Name.ValueString(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("lbhost_node_vip: delete", fmt.Sprintf("NodeVIP %s/%s: %v", ns, m.Name.ValueString(), err))
	}
}

func (r *nodeVIPResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("wait_timeout"), "30s")...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("standby"), false)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("announce"), vipapi.AnnounceL2)...)
}
