// The lbhost_node_bgp resource: BGP mode's NodeBGP object (the cluster
// nodes' peering), checked at plan by lbhost/frr's rules.

package tfprovider

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/bgp"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

type nodeBGPResource struct{ connected }

func newNodeBGPResource() resource.Resource { return &nodeBGPResource{} }

type nodeBGPModel struct {
	ID           types.String       `tfsdk:"id"`
	ASN          int64              `tfsdk:"asn"`
	Peers        []nodeBGPPeerModel `tfsdk:"peers"`
	BFDProfiles  []nodeBGPBFDModel  `tfsdk:"bfd_profiles"`
	Pools        []nodeBGPPoolModel `tfsdk:"pools"`
	NodeNetworks []string           `tfsdk:"node_networks"`
	WaitTimeout  types.String       `tfsdk:"wait_timeout"`
	Configured   types.List         `tfsdk:"configured_nodes"`
}

type nodeBGPPeerModel struct {
	Name           types.String      `tfsdk:"name"`
	Address        types.String      `tfsdk:"address"`
	ASN            int64             `tfsdk:"asn"`
	Port           types.Int64       `tfsdk:"port"`
	KeepaliveTime  types.Int64       `tfsdk:"keepalive_time"`
	HoldTime       types.Int64       `tfsdk:"hold_time"`
	PasswordSecret *nodeBGPSecretRef `tfsdk:"password_secret"`
	BFDProfile     types.String      `tfsdk:"bfd_profile"`
	IBGP           types.Bool        `tfsdk:"ibgp"`
	NodeSelector   map[string]string `tfsdk:"node_selector"`
}

type nodeBGPSecretRef struct {
	Name string `tfsdk:"name"`
	Key  string `tfsdk:"key"`
}

type nodeBGPBFDModel struct {
	Name             types.String `tfsdk:"name"`
	ReceiveInterval  types.Int64  `tfsdk:"receive_interval"`
	TransmitInterval types.Int64  `tfsdk:"transmit_interval"`
	DetectMultiplier types.Int64  `tfsdk:"detect_multiplier"`
}

type nodeBGPPoolModel struct {
	Name        types.String `tfsdk:"name"`
	Prefixes    []string     `tfsdk:"prefixes"`
	Communities []string     `tfsdk:"communities"`
	LocalPref   types.Int64  `tfsdk:"local_pref"`
}

func (r *nodeBGPResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node_bgp"
}

func (r *nodeBGPResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Node mode's BGP peering (a provider with `kubernetes`): the NodeBGP object `" + vipapi.BGPName + "` in the provider's " +
			"namespace, one per cluster. Every node agent (chart value `nodeAgent.bgp.enabled`) configures its node's own FRR with these " +
			"peers, BFD profiles and pools (objects named tfccm-*, the rest of the node's FRR untouched) and announces there the " +
			"`lbhost_node_vip`s with `announce = \"bgp\"` it is eligible for. Passwords are never here: a peer names a key of a Secret in " +
			"the namespace that the agents read. Every value is checked at plan (a reserved or clashing AS, a peer outside `node_networks`, " +
			"an invalid community, an unknown BFD profile), naming the setting. Apply returns once a node's FRR holds the peering, and " +
			"fails with the nodes' reasons (no FRR on the node, another AS in its `router bgp`) after `wait_timeout`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "`<namespace>/" + vipapi.BGPName + "`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"asn": schema.Int64Attribute{Required: true, Description: "The nodes' AS."},
			"peers": schema.ListNestedAttribute{Required: true, Description: "The routers the nodes peer with.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":           schema.StringAttribute{Required: true, Description: "The peer's name (1-32 of a-z, 0-9, '-'); its description on the nodes is tfccm-<name>."},
					"address":        schema.StringAttribute{Required: true, Description: "Its address, on a network of the nodes it peers with."},
					"asn":            schema.Int64Attribute{Required: true, Description: "Its AS."},
					"port":           schema.Int64Attribute{Optional: true, Description: "Its BGP port (default 179)."},
					"keepalive_time": schema.Int64Attribute{Optional: true, Description: "Seconds (with hold_time; default FRR's 60)."},
					"hold_time":      schema.Int64Attribute{Optional: true, Description: "Seconds, at least 3 × keepalive_time (default FRR's 180)."},
					"password_secret": schema.SingleNestedAttribute{Optional: true, Description: "The key of a Secret in the provider's namespace holding the TCP MD5 password (the chart's nodeAgent.bgp.passwordSecrets lets the agents read it).",
						Attributes: map[string]schema.Attribute{
							"name": schema.StringAttribute{Required: true, Description: "The Secret's name."},
							"key":  schema.StringAttribute{Required: true, Description: "Its key."},
						}},
					"bfd_profile":   schema.StringAttribute{Optional: true, Description: "One of bfd_profiles: BFD on the session."},
					"ibgp":          schema.BoolAttribute{Optional: true, Description: "The peer shares the nodes' AS on purpose."},
					"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType, Description: "Only the nodes with these labels peer with it (a rack's router); default every node."},
				}}},
			"bfd_profiles": schema.ListNestedAttribute{Optional: true, Description: "BFD timer sets.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":              schema.StringAttribute{Required: true, Description: "Its name; on the nodes tfccm-<name>."},
					"receive_interval":  schema.Int64Attribute{Optional: true, Description: "Milliseconds, 10-60000 (default 300)."},
					"transmit_interval": schema.Int64Attribute{Optional: true, Description: "Milliseconds, 10-60000 (default 300)."},
					"detect_multiplier": schema.Int64Attribute{Optional: true, Description: "2-255 (default 3)."},
				}}},
			"pools": schema.ListNestedAttribute{Required: true, Description: "The address pools whose addresses the nodes announce (a /32 or /128 each).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Required: true, Description: "The pool's name."},
					"prefixes":    schema.ListAttribute{Required: true, ElementType: types.StringType, Description: "Its CIDRs."},
					"communities": schema.ListAttribute{Optional: true, ElementType: types.StringType, Description: "Standard, large or well-known communities on its announcements."},
					"local_pref":  schema.Int64Attribute{Optional: true, Description: "Local preference on its announcements (iBGP peers)."},
				}}},
			"node_networks": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Description: "The networks of the nodes' interfaces (CIDRs): a peer outside all of them is refused at plan. Empty: checked by each agent against its node's interfaces."},
			"wait_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("60s"),
				Description: "How long apply waits for a node's FRR to hold the peering (a Go duration). Default `60s`."},
			"configured_nodes": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				Description: "The nodes whose FRR holds the peering, as the agents last reported."},
		},
	}
}

// spec is the object's spec from m.
func (m *nodeBGPModel) spec() vipapi.NodeBGPSpec {
	s := vipapi.NodeBGPSpec{ASN: m.ASN}
	for _, p := range m.Peers {
		vp := vipapi.BGPPeer{Name: p.Name.ValueString(), Address: p.Address.ValueString(), ASN: p.ASN, Port: int32(p.Port.ValueInt64()),
			KeepaliveTime: int32(p.KeepaliveTime.ValueInt64()), HoldTime: int32(p.HoldTime.ValueInt64()), BFDProfile: p.BFDProfile.ValueString(),
			IBGP: p.IBGP.ValueBool(), NodeSelector: p.NodeSelector}
		if p.PasswordSecret != nil {
			vp.PasswordSecret = &vipapi.SecretKeyRef{Name: p.PasswordSecret.Name, Key: p.PasswordSecret.Key}
		}
		s.Peers = append(s.Peers, vp)
	}
	for _, b := range m.BFDProfiles {
		s.BFDProfiles = append(s.BFDProfiles, vipapi.BFDProfile{Name: b.Name.ValueString(), ReceiveInterval: int32(b.ReceiveInterval.ValueInt64()),
			TransmitInterval: int32(b.TransmitInterval.ValueInt64()), DetectMultiplier: int32(b.DetectMultiplier.ValueInt64())})
	}
	for _, p := range m.Pools {
		vp := vipapi.BGPPool{Name: p.Name.ValueString(), Prefixes: p.Prefixes, Communities: p.Communities}
		if !p.LocalPref.IsNull() && !p.LocalPref.IsUnknown() {
			lp := p.LocalPref.ValueInt64()
			vp.LocalPref = &lp
		}
		s.Pools = append(s.Pools, vp)
	}
	return s
}

// check applies lbhost/frr's rules, as each node will, for every node
// selector (a peer is checked against the networks once).
func (m *nodeBGPModel) check() error {
	n := bgp.Node{}
	for i, s := range m.NodeNetworks {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return &frr.Error{Field: fmt.Sprintf("node_networks[%d]", i), Msg: fmt.Sprintf("%q is not a CIDR", s)}
		}
		n.Networks = append(n.Networks, p.Masked())
	}
	spec := m.spec()
	// Every peer, whatever its node selector: drop the selectors.
	for i := range spec.Peers {
		spec.Peers[i].NodeSelector = nil
	}
	_, err := bgp.Config(spec, n, nil)
	return err
}

// ValidateConfig checks a configuration whose values are known (literal
// values: `tofu validate`); ModifyPlan checks it at plan otherwise.
func (r *nodeBGPResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	checkNodeBGP(ctx, req.Config, &resp.Diagnostics)
}

// ModifyPlan checks the configuration at plan, its values known by then.
func (r *nodeBGPResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.Config.Raw.IsFullyKnown() {
		return
	}
	checkNodeBGP(ctx, req.Config, &resp.Diagnostics)
}

func checkNodeBGP(ctx context.Context, cfg tfsdk.Config, diags *diag.Diagnostics) {
	var m nodeBGPModel
	diags.Append(cfg.Get(ctx, &m)...)
	if diags.HasError() || hasUnknown(m) {
		return
	}
	resp := struct{ Diagnostics *diag.Diagnostics }{diags}
	if err := m.check(); err != nil {
		field, msg := "", err.Error()
		if fe, ok := err.(*frr.Error); ok {
			field, msg = fe.Field, fe.Msg
		}
		resp.Diagnostics.AddAttributeError(path.Root(strings.SplitN(field, "[", 2)[0]), "lbhost_node_bgp: "+field, msg)
	}
}

// hasUnknown: some value is not known yet (checked at apply then).
func hasUnknown(m nodeBGPModel) bool {
	for _, p := range m.Peers {
		if p.Address.IsUnknown() || p.Name.IsUnknown() {
			return true
		}
	}
	for _, p := range m.Pools {
		if p.Name.IsUnknown() {
			return true
		}
	}
	return false
}

func (r *nodeBGPResource) client() (dynamic.ResourceInterface, string, error) {
	if r.c == nil || r.c.kube == nil {
		return nil, "", fmt.Errorf("lbhost_node_bgp needs a provider with `kubernetes` (node mode)")
	}
	dyn, err := r.c.kube.client()
	if err != nil {
		return nil, "", err
	}
	ns := r.c.kube.cfg.Namespace.ValueString()
	return dyn.Resource(vipapi.BGPGVR).Namespace(ns), ns, nil
}

func (r *nodeBGPResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.write(ctx, req.Plan.Get, resp.State.Set, &resp.Diagnostics, true)
}

func (r *nodeBGPResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.write(ctx, req.Plan.Get, resp.State.Set, &resp.Diagnostics, false)
}

func (r *nodeBGPResource) write(ctx context.Context, get func(context.Context, any) diag.Diagnostics, set func(context.Context, any) diag.Diagnostics, diags *diag.Diagnostics, create bool) {
	var m nodeBGPModel
	diags.Append(get(ctx, &m)...)
	if diags.HasError() {
		return
	}
	if err := m.check(); err != nil {
		diags.AddError("lbhost_node_bgp: invalid", err.Error())
		return
	}
	cl, ns, err := r.client()
	if err != nil {
		diags.AddError("lbhost_node_bgp: connect", err.Error())
		return
	}
	var u *unstructured.Unstructured
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := cl.Get(ctx, vipapi.BGPName, metav1.GetOptions{})
		b := &vipapi.NodeBGP{ObjectMeta: metav1.ObjectMeta{Name: vipapi.BGPName, Namespace: ns}}
		switch {
		case apierrors.IsNotFound(err):
			b.Spec = m.spec()
			obj, cerr := vipapi.BGPToUnstructured(b)
			if cerr != nil {
				return cerr
			}
			u, err = cl.Create(ctx, obj, metav1.CreateOptions{FieldManager: "tfccm"})
			return err
		case err != nil:
			return err
		}
		if b, err = vipapi.BGPFromUnstructured(got); err != nil {
			return err
		}
		b.Spec = m.spec()
		obj, err := vipapi.BGPToUnstructured(b)
		if err != nil {
			return err
		}
		u, err = cl.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "tfccm"})
		return err
	})
	if err != nil {
		diags.AddError("lbhost_node_bgp: write", fmt.Sprintf("NodeBGP %s/%s: %v", ns, vipapi.BGPName, err))
		return
	}
	m.ID = types.StringValue(ns + "/" + vipapi.BGPName)
	timeout, perr := time.ParseDuration(m.WaitTimeout.ValueString())
	if perr != nil || timeout < 0 {
		timeout = 60 * time.Second
	}
	nodes, werr := waitConfigured(ctx, cl, u.GetGeneration(), timeout)
	m.Configured = stringList(nodes)
	diags.Append(set(ctx, &m)...)
	if werr != nil {
		diags.AddError("lbhost_node_bgp: no node's FRR holds the peering", werr.Error())
	}
}

// waitConfigured waits until a node reports generation gen configured;
// it returns the nodes that did, or the nodes' reasons after timeout.
func waitConfigured(ctx context.Context, cl dynamic.ResourceInterface, gen int64, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *vipapi.NodeBGP
	for {
		if u, err := cl.Get(ctx, vipapi.BGPName, metav1.GetOptions{}); err == nil {
			if b, err := vipapi.BGPFromUnstructured(u); err == nil {
				last = b
				if ok := configuredNodes(b, gen); len(ok) > 0 {
					return ok, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			var why []string
			if last != nil {
				for _, n := range last.Status.Nodes {
					if n.ObservedGeneration == gen && n.Message != "" {
						why = append(why, n.Message)
					}
				}
			}
			if len(why) == 0 {
				return nil, fmt.Errorf("no node agent reported on NodeBGP %s within %s: are the chart's node agents running with nodeAgent.bgp.enabled?", vipapi.BGPName, timeout)
			}
			return nil, fmt.Errorf("not configured after %s: %s", timeout, strings.Join(why, "; "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func configuredNodes(b *vipapi.NodeBGP, gen int64) []string {
	var out []string
	for _, n := range b.Status.Nodes {
		if n.Configured && n.ObservedGeneration >= gen {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (r *nodeBGPResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, ok := readPrior[nodeBGPModel](ctx, req, resp)
	if !ok {
		return
	}
	cl, _, err := r.client()
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_bgp: connect", err.Error())
		return
	}
	u, err := cl.Get(ctx, vipapi.BGPName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_bgp: read", err.Error())
		return
	}
	b, err := vipapi.BGPFromUnstructured(u)
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_bgp: read", err.Error())
		return
	}
	// The spec as written is the state's (a change on the object shows as
	// a diff only through its ASN: the rest is tfccm's own).
	m.ASN = b.Spec.ASN
	m.Configured = stringList(configuredNodes(b, b.Generation))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *nodeBGPResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	cl, ns, err := r.client()
	if err != nil {
		resp.Diagnostics.AddError("lbhost_node_bgp: connect", err.Error())
		return
	}
	// The agents remove every tfccm object from their nodes' FRR once it
	// is gone.
	if err := cl.Delete(ctx, vipapi.BGPName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("lbhost_node_bgp: delete", fmt.Sprintf("NodeBGP %s/%s: %v", ns, vipapi.BGPName, err))
	}
}
