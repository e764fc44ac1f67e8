// What lbhost_vip and lbhost_routed_vip share: an address claimed by an
// owner from a pool on the host, perhaps shared by token — the attributes
// that declare the claim, reading the pool and the requested address, and
// the Create and Delete of a claim.

package tfprovider

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
)

// shareCheck validates a share token.
var shareCheck = stringCheck{desc: "1-63 lowercase letters, digits or '-'", ok: func(s string) bool { return s != "" && host.ValidShare(s) }}

// claimSchema is what each resource says of its claim's attributes (id,
// owner, pool, address, share); everything else about them is the same.
type claimSchema struct {
	ownerValidators   []validator.String
	pool              string // the pool's description
	poolValidators    []validator.String
	address           string // the address's description
	addressValidators []validator.String
	share             string // the share token's description
}

// attributes are the claim's attributes and the resource's own.
func (c claimSchema) attributes(own map[string]schema.Attribute) map[string]schema.Attribute {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, Description: "The owner.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"owner": schema.StringAttribute{Required: true, Description: "Who holds the claim (e.g. `<cluster>_<load balancer>`).",
			Validators: c.ownerValidators, PlanModifiers: replace},
		"pool": schema.StringAttribute{Required: true, Description: c.pool,
			Validators: c.poolValidators, PlanModifiers: replace},
		"address": schema.StringAttribute{Optional: true, Computed: true,
			Description:   c.address,
			Validators:    c.addressValidators,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()}},
		"share": schema.StringAttribute{Optional: true, Description: c.share,
			Validators: []validator.String{shareCheck}, PlanModifiers: replace},
	}
	maps.Copy(attrs, own)
	return attrs
}

// parsePool reads the pool attribute.
func parsePool(pool types.String) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(pool.ValueString())
	if err != nil {
		return netip.Prefix{}, &host.FieldError{Field: "pool", Msg: fmt.Sprintf("%q is not a CIDR", pool.ValueString())}
	}
	return p, nil
}

// requested is the address attribute as a request: "" while it is null or
// unknown (one is allocated).
func requested(address types.String) string {
	if address.IsNull() || address.IsUnknown() {
		return ""
	}
	return address.ValueString()
}

// createClaim is the Create of both: the planned model m, claimed on the
// host by claim, which returns the address ("" when nothing was claimed).
// A claimed address is recorded in state (by record, then as m) even when
// the rest failed, so the next apply keeps it instead of claiming another.
func createClaim[M any](ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse, summary func(M) string,
	claim func(*M) (string, error), record func(m *M, addr string, err error)) {
	var m M
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	addr, err := claim(&m)
	if addr != "" {
		record(&m, addr, err)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
	if err != nil {
		addError(&resp.Diagnostics, summary(m), err)
	}
}
