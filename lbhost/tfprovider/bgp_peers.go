// What lbhost_bgp_speaker and lbhost_bgp_router share: a BGP neighbour
// and a BFD profile as arguments, their schema and their conversion into
// lbhost/frr's types.

package tfprovider

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/lbhost/host"
)

type bgpPeerModel struct {
	Name         string       `tfsdk:"name"`
	Address      string       `tfsdk:"address"`
	ASN          int64        `tfsdk:"asn"`
	Port         types.Int64  `tfsdk:"port"`
	Keepalive    types.Int64  `tfsdk:"keepalive_time"`
	Hold         types.Int64  `tfsdk:"hold_time"`
	PasswordFile types.String `tfsdk:"password_file"`
	Password     types.String `tfsdk:"password"`
	BFDProfile   types.String `tfsdk:"bfd_profile"`
	IBGP         types.Bool   `tfsdk:"ibgp"`
}

type bfdProfileModel struct {
	Name             string      `tfsdk:"name"`
	ReceiveMS        types.Int64 `tfsdk:"receive_interval_ms"`
	TransmitMS       types.Int64 `tfsdk:"transmit_interval_ms"`
	DetectMultiplier types.Int64 `tfsdk:"detect_multiplier"`
}

// peerAttributes are a neighbour's arguments; address and password_file
// say where the address is and where the password file is read.
func peerAttributes(address, passwordFile string) map[string]schema.Attribute {
	str := func(d string) schema.StringAttribute { return schema.StringAttribute{Required: true, Description: d} }
	optInt := func(d string) schema.Int64Attribute { return schema.Int64Attribute{Optional: true, Description: d} }
	return map[string]schema.Attribute{
		"name":           str("The peer's name (1-32 of a-z, 0-9, '-'): its description in FRR, and how Warnings and metrics name it."),
		"address":        str(address),
		"asn":            schema.Int64Attribute{Required: true, Description: "The peer's AS number. The speaker's own only with `ibgp = true`."},
		"port":           optInt("The peer's BGP port. Default 179."),
		"keepalive_time": optInt("Seconds between keepalives (with `hold_time`). Default FRR's 60."),
		"hold_time":      optInt("Seconds without a message before the session is down: at least 3 and 3 × `keepalive_time`. Default FRR's 180; BFD detects a dead peer far sooner."),
		"password_file":  schema.StringAttribute{Optional: true, Description: passwordFile},
		"password": schema.StringAttribute{Optional: true, Sensitive: true, Description: "Refused: a password given here would be in the plan and the state. " +
			"Declared only so that it is refused by name (an object's unknown attributes are dropped silently); use `password_file`."},
		"bfd_profile": schema.StringAttribute{Optional: true, Description: "One of `bfd_profiles`: BFD on the session, which takes it down as soon as BFD does."},
		"ibgp":        schema.BoolAttribute{Optional: true, Description: "The peer shares the speaker's AS on purpose (iBGP); without it an equal AS is refused."},
	}
}

// bfdProfilesAttribute is the bfd_profiles argument.
func bfdProfilesAttribute() schema.ListNestedAttribute {
	optInt := func(d string) schema.Int64Attribute { return schema.Int64Attribute{Optional: true, Description: d} }
	return schema.ListNestedAttribute{Optional: true, Description: "Named BFD timer sets.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name":                 schema.StringAttribute{Required: true, Description: "The profile's name."},
			"receive_interval_ms":  optInt("Milliseconds (10-60000). Default 300."),
			"transmit_interval_ms": optInt("Milliseconds (10-60000). Default 300."),
			"detect_multiplier":    optInt("Missed packets before the peer is down (2-255). Default 3."),
		}}}
}

// checkASNRange refuses an AS number outside 32 bits (frr.CheckASN then
// refuses the reserved ones).
func checkASNRange(field string, asn int64) error {
	if asn < 1 || asn > 4294967294 {
		return &frr.Error{Field: field, Msg: fmt.Sprintf("%d: want 1-4294967294", asn)}
	}
	return nil
}

// peer is p without its password (read from password_file by the
// caller, where the file is); field names p in errors (peers[0]).
func (p bgpPeerModel) peer(field string) (frr.Peer, error) {
	if !p.Password.IsNull() {
		return frr.Peer{}, &frr.Error{Field: field + ".password",
			Msg: "a BGP password is never an argument (it would be in the plan and the state): put it in a file (a mounted Secret) and set password_file to its path"}
	}
	a, err := netip.ParseAddr(p.Address)
	if err != nil {
		return frr.Peer{}, &frr.Error{Field: field + ".address", Msg: fmt.Sprintf("%q is not an IP address", p.Address)}
	}
	if err := checkASNRange(field+".asn", p.ASN); err != nil {
		return frr.Peer{}, err
	}
	return frr.Peer{Name: p.Name, Address: a, ASN: uint32(p.ASN), Port: uint16(p.Port.ValueInt64()),
		Keepalive: time.Duration(p.Keepalive.ValueInt64()) * time.Second, Hold: time.Duration(p.Hold.ValueInt64()) * time.Second,
		BFDProfile: p.BFDProfile.ValueString(), IBGP: p.IBGP.ValueBool()}, nil
}

func bfdProfiles(ms []bfdProfileModel) []frr.BFDProfile {
	var out []frr.BFDProfile
	for _, b := range ms {
		out = append(out, frr.BFDProfile{Name: b.Name,
			ReceiveInterval:  time.Duration(b.ReceiveMS.ValueInt64()) * time.Millisecond,
			TransmitInterval: time.Duration(b.TransmitMS.ValueInt64()) * time.Millisecond,
			DetectMultiplier: int(b.DetectMultiplier.ValueInt64())})
	}
	return out
}

// readFRRHash is the Read of the FRR resources (speaker and router): the
// prior state with the hash of what is on the host now (hash), kept as it
// was while the host is unreachable.
func readFRRHash[M any](ctx context.Context, c *conn, req resource.ReadRequest, resp *resource.ReadResponse,
	summary func(M) string, field func(*M) *types.String, hash func(*host.Host, context.Context) (string, error)) {
	m, ok := readPrior[M](ctx, req, resp)
	if !ok {
		return
	}
	h, err := c.host(ctx)
	if keptUnreachable(&resp.Diagnostics, summary(m), err) {
		return
	}
	var sum string
	if err == nil {
		sum, err = hash(h, ctx)
	}
	if err != nil {
		addError(&resp.Diagnostics, summary(m), err)
		return
	}
	*field(&m) = types.StringValue(sum)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
