// The lbhost_bgp_speaker resource: the host's FRR configuration.

package tfprovider

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

var (
	_ resource.ResourceWithModifyPlan     = (*bgpSpeakerResource)(nil)
	_ resource.ResourceWithValidateConfig = (*bgpSpeakerResource)(nil)
)

type bgpSpeakerResource struct{ connected }

func newBGPSpeakerResource() resource.Resource { return &bgpSpeakerResource{} }

type bgpSpeakerModel struct {
	ID          types.String      `tfsdk:"id"`
	ASN         int64             `tfsdk:"asn"`
	RouterID    string            `tfsdk:"router_id"`
	Peers       []bgpPeerModel    `tfsdk:"peers"`
	BFDProfiles []bfdProfileModel `tfsdk:"bfd_profiles"`
	Pools       []bgpPoolModel    `tfsdk:"pools"`
	ConfigHash  types.String      `tfsdk:"config_hash"`
}

type bgpPoolModel struct {
	Name        string      `tfsdk:"name"`
	Prefixes    []string    `tfsdk:"prefixes"`
	Communities []string    `tfsdk:"communities"`
	LocalPref   types.Int64 `tfsdk:"local_preference"`
}

func (r *bgpSpeakerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_bgp_speaker"
}

func (r *bgpSpeakerResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	str := func(d string) schema.StringAttribute { return schema.StringAttribute{Required: true, Description: d} }
	optInt := func(d string) schema.Int64Attribute { return schema.Int64Attribute{Optional: true, Description: d} }
	resp.Schema = schema.Schema{
		Description: "The host's BGP speaker: FRR's configuration (`frr_config`, written by lbhost, checked with `vtysh -C`, applied with " +
			"`frr-reload.py`, so sessions that stay are not reset). bgpd announces every /32 and /128 inside a pool that is on one of the host's " +
			"interfaces (`lbhost_bgp_announcement`'s announcer routes it to the loopback while its frontend serves), with the pool's communities and local " +
			"preference, and accepts no route from its peers. Every peer must be on one of the host's networks (checked at plan). Passwords come " +
			"from files on the machine running OpenTofu and never reach the plan or state: `config_hash` is the hash of the file with its passwords " +
			"masked, so a rotated password is written by the next apply that changes the speaker, or by `-replace`. Destroying it leaves FRR without BGP.",
		Attributes: map[string]schema.Attribute{
			"id":        schema.StringAttribute{Computed: true, Description: "`frr`."},
			"asn":       schema.Int64Attribute{Required: true, Description: "The host's AS number (1-4294967294 but 23456 and 65535)."},
			"router_id": str("The host's BGP identifier: an IPv4 address, usually its own."),
			"peers": schema.ListNestedAttribute{Required: true, Description: "The BGP neighbours (top-of-rack routers).",
				NestedObject: schema.NestedAttributeObject{Attributes: peerAttributes(
					"The peer's address (IPv4 or IPv6) on one of the host's networks; IPv4 peers get the IPv4 announcements, IPv6 peers the IPv6 ones.",
					"Path, on the machine running OpenTofu (a mounted Secret), of a file holding the session's TCP MD5 password "+
						"(1-80 printable characters without spaces; a trailing newline is dropped). The password itself is never an argument.")}},
			"bfd_profiles": bfdProfilesAttribute(),
			"pools": schema.ListNestedAttribute{Required: true, Description: "The address pools whose addresses are announced.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     str("The pool's name."),
					"prefixes": schema.ListAttribute{Required: true, ElementType: types.StringType, Description: "Its CIDRs (IPv4 and IPv6)."},
					"communities": schema.ListAttribute{Optional: true, ElementType: types.StringType,
						Description: "Communities of its announcements: `<asn>:<value>`, large `<asn>:<a>:<b>`, or no-export, no-advertise, local-AS, blackhole, graceful-shutdown."},
					"local_preference": optInt("Local preference of its announcements (iBGP peers)."),
				}}},
			"config_hash": schema.StringAttribute{Computed: true, Description: "Hash of FRR's configuration on the host with its passwords masked: a change made on the host is a diff."},
		},
	}
}

// config is the typed configuration; with passwords, the password files
// are read (at plan and apply; not by ValidateConfig, which `tofu
// validate` runs where the files may not be).
func (m bgpSpeakerModel) config(passwords bool) (frr.Config, error) {
	rid, err := netip.ParseAddr(m.RouterID)
	if err != nil {
		return frr.Config{}, &frr.Error{Field: "router_id", Msg: fmt.Sprintf("%q is not an IPv4 address", m.RouterID)}
	}
	c := frr.Config{ASN: uint32(m.ASN), RouterID: rid}
	if err := checkASNRange("asn", m.ASN); err != nil {
		return c, err
	}
	for i, p := range m.Peers {
		peer, err := p.peer(fmt.Sprintf("peers[%d]", i))
		if err != nil {
			return c, err
		}
		if f := p.PasswordFile.ValueString(); f != "" && passwords {
			b, err := os.ReadFile(f)
			if err != nil {
				// The error names the file, never its content.
				return c, &frr.Error{Field: fmt.Sprintf("peers[%d].password_file", i), Msg: fmt.Sprintf("cannot read %s: %v", f, unwrapPath(err))}
			}
			if peer.Password = strings.TrimSuffix(string(b), "\n"); peer.Password == "" {
				return c, &frr.Error{Field: fmt.Sprintf("peers[%d].password_file", i), Msg: f + " is empty"}
			}
		}
		c.Peers = append(c.Peers, peer)
	}
	c.BFDProfiles = bfdProfiles(m.BFDProfiles)
	for i, p := range m.Pools {
		pool := frr.Pool{Name: p.Name, Communities: p.Communities}
		for j, s := range p.Prefixes {
			pr, err := netip.ParsePrefix(s)
			if err != nil {
				return c, &frr.Error{Field: fmt.Sprintf("pools[%d].prefixes[%d]", i, j), Msg: fmt.Sprintf("%q is not a CIDR", s)}
			}
			pool.Prefixes = append(pool.Prefixes, pr)
		}
		if !p.LocalPref.IsNull() {
			lp := p.LocalPref.ValueInt64()
			if lp < 0 || lp > 4294967295 {
				return c, &frr.Error{Field: fmt.Sprintf("pools[%d].local_preference", i), Msg: fmt.Sprintf("%d: want 0-4294967295", lp)}
			}
			v := uint32(lp)
			pool.LocalPref = &v
		}
		c.Pools = append(c.Pools, pool)
	}
	return c, c.Validate()
}

// unwrapPath drops the path os.ReadFile repeats.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func (m bgpSpeakerModel) summary() string { return "lbhost_bgp_speaker" }

// ValidateConfig checks every value at plan, without the host (the
// networks are checked by ModifyPlan, which reaches it).
func (r *bgpSpeakerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	var m bgpSpeakerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := m.config(false); err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
	}
}

// ModifyPlan checks the peers against the host's networks and plans the
// configuration's hash (a change on the host, or in the arguments, is an
// update).
func (r *bgpSpeakerResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.Config.Raw.IsFullyKnown() || r.c == nil {
		return
	}
	var m bgpSpeakerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := m.config(true)
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	h, err := r.c.host(ctx)
	if err == nil {
		c.Networks, err = h.Networks(ctx)
	}
	switch {
	case transport.IsUnreachable(err):
		resp.Diagnostics.AddWarning(m.summary()+": host unreachable", err.Error()+"; its peers are checked against its networks when it answers")
	case err != nil:
		addError(&resp.Diagnostics, m.summary(), err)
		return
	default:
		if err := c.Validate(); err != nil {
			off := offNetworkPeers(c)
			if !priorPeers(ctx, req.State, off) {
				addError(&resp.Diagnostics, m.summary(), err)
				return
			}
			// Only peers applied before are off the host's networks now
			// (its addresses changed, or went with a link): no new input
			// is wrong, and refusing would block every plan, a destroy's
			// refresh too.
			resp.Diagnostics.AddWarning(m.summary()+": a peer is off the host's networks", err.Error()+
				"; it was applied before, so the plan goes on: fix the host's addresses or the peer")
			c.Networks = nil
		}
	}
	text, err := frr.Render(c)
	if err != nil {
		addError(&resp.Diagnostics, m.summary(), err)
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("config_hash"), host.ConfigHash(text))...)
}

// offNetworkPeers are the addresses of c's peers outside every one of
// c.Networks.
func offNetworkPeers(c frr.Config) []string {
	var off []string
	for _, p := range c.Peers {
		on := false
		for _, n := range c.Networks {
			on = on || n.Contains(p.Address)
		}
		if !on {
			off = append(off, p.Address.String())
		}
	}
	return off
}

// priorPeers reports whether every address of addrs (at least one) is a
// peer's in the prior state.
func priorPeers(ctx context.Context, state tfsdk.State, addrs []string) bool {
	if len(addrs) == 0 || state.Raw.IsNull() {
		return false
	}
	var prior bgpSpeakerModel
	if state.Get(ctx, &prior).HasError() {
		return false
	}
	for _, a := range addrs {
		if !slices.ContainsFunc(prior.Peers, func(p bgpPeerModel) bool { return p.Address == a }) {
			return false
		}
	}
	return true
}

func (r *bgpSpeakerResource) write(ctx context.Context, m *bgpSpeakerModel) error {
	c, err := m.config(true)
	if err != nil {
		return err
	}
	h, err := r.c.host(ctx)
	if err != nil {
		return err
	}
	if err := h.ApplySpeaker(ctx, c); err != nil {
		return err
	}
	text, _ := frr.Render(c)
	m.ID, m.ConfigHash = types.StringValue("frr"), types.StringValue(host.ConfigHash(text))
	return nil
}

func (r *bgpSpeakerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, bgpSpeakerModel.summary, func(m *bgpSpeakerModel) error { return r.write(ctx, m) })
}

func (r *bgpSpeakerResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	writePlan(ctx, req.Plan, &resp.State, &resp.Diagnostics, bgpSpeakerModel.summary, func(m *bgpSpeakerModel) error { return r.write(ctx, m) })
}

// Read reports the hash of the file on the host: edited or gone, the
// next plan updates it.
func (r *bgpSpeakerResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	readFRRHash(ctx, r.c, req, resp, bgpSpeakerModel.summary, func(m *bgpSpeakerModel) *types.String { return &m.ConfigHash }, (*host.Host).SpeakerHash)
}

func (r *bgpSpeakerResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteHosted(ctx, r.c, req, resp, bgpSpeakerModel.summary, func(h *host.Host, _ bgpSpeakerModel) error { return h.DeleteSpeaker(ctx) })
}
