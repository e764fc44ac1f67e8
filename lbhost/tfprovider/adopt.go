// Adoption of a hand-made keepalived VRRP instance: the import id
// "keepalived:<instance>,<owner>,<pool>" of lbhost_vip_allocation (read
// on every host) and lbhost_vip (read on its host), and the check that
// the adopted address stays the one asked for.

package tfprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/keepalived"
)

// adoptPrefix starts an import id that adopts a hand-made instance.
const adoptPrefix = "keepalived:"

// adoptedKey is the private state key of an adopted allocation: the
// instance's name.
const adoptedKey = "adopted_keepalived_instance"

// adoptID is a parsed "keepalived:<instance>,<owner>,<pool>".
type adoptID struct {
	instance, owner string
	pool            netip.Prefix
}

// parseAdoptID parses id; ok false when id does not start with
// "keepalived:" (another import id).
func parseAdoptID(id string) (a adoptID, ok bool, err error) {
	rest, ok := strings.CutPrefix(id, adoptPrefix)
	if !ok {
		return a, false, nil
	}
	parts := strings.Split(rest, ",")
	if len(parts) != 3 {
		return a, true, fmt.Errorf("want keepalived:<instance>,<owner>,<pool>")
	}
	if !keepalived.ValidName(parts[0]) {
		return a, true, fmt.Errorf("the instance name must be 1-64 letters, digits, '_', '.' or '-'")
	}
	if !host.ValidOwner(parts[1]) {
		return a, true, fmt.Errorf("the owner must be 1-100 lowercase letters, digits, '_', '.' or '-'")
	}
	pool, err := netip.ParsePrefix(parts[2])
	if err == nil {
		err = host.CheckPool(pool)
	}
	if err != nil {
		return a, true, fmt.Errorf("the pool: %v", err)
	}
	return adoptID{instance: parts[0], owner: parts[1], pool: pool}, true, nil
}

// ImportState adopts a hand-made instance: "keepalived:<instance>,<owner>,<pool>".
// Every host must answer and have the instance alike; its address and id
// become the allocation's. Nothing is changed on the hosts.
func (r *allocationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	a, ok, err := parseAdoptID(req.ID)
	if !ok {
		err = fmt.Errorf("want keepalived:<instance>,<owner>,<pool> (an allocation is imported only by adopting a hand-made keepalived instance)")
	}
	if err != nil {
		resp.Diagnostics.AddError("import lbhost_vip_allocation", fmt.Sprintf("id %q: %v", req.ID, err))
		return
	}
	summary := "import lbhost_vip_allocation " + a.owner
	up, down, err := r.c.reach(ctx)
	if err == nil && len(down) > 0 {
		err = fmt.Errorf("vrrp_instance %s cannot be adopted while %s do not answer: it is read on every LB host", a.instance, strings.Join(down, ", "))
	}
	var al host.Allocation
	var iface string
	if err == nil {
		al, iface, err = host.AdoptionOf(ctx, up, a.instance, a.owner, a.pool)
	}
	if err != nil {
		addError(&resp.Diagnostics, summary, err)
		return
	}
	m := allocationModel{ID: types.StringValue(a.owner), Owner: types.StringValue(a.owner), Pool: types.StringValue(a.pool.String()),
		Address: types.StringValue(al.Address), Share: types.StringNull(), Interface: types.StringValue(iface),
		VRIDRange: types.StringValue(fmt.Sprintf("%d-%d", al.VirtualRouterID, al.VirtualRouterID)), VirtualRouterID: types.Int64Value(int64(al.VirtualRouterID))}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	name, _ := json.Marshal(a.instance)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, adoptedKey, name)...)
}

// checkAdoptedAddress refuses, at plan, an adopted allocation whose
// requested address is not the adopted instance's (a replacement of what
// was adopted, and another address for the Service).
func checkAdoptedAddress(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) diag.Diagnostics {
	var diags diag.Diagnostics
	raw, d := req.Private.GetKey(ctx, adoptedKey)
	diags.Append(d...)
	var name string
	if len(raw) == 0 || json.Unmarshal(raw, &name) != nil {
		return diags
	}
	var cfg, state allocationModel
	diags.Append(req.Config.Get(ctx, &cfg)...)
	diags.Append(req.State.Get(ctx, &state)...)
	if diags.HasError() || cfg.Address.IsNull() || cfg.Address.IsUnknown() || cfg.Address.ValueString() == state.Address.ValueString() {
		return diags
	}
	diags.AddAttributeError(path.Root("address"), "lbhost_vip_allocation "+state.Owner.ValueString()+": not the adopted address",
		fmt.Sprintf("address: the adopted vrrp_instance %s holds %s, and %s is asked for; adopting keeps the address (set the Service's address to %s, or adopt another instance). Nothing is changed.",
			name, state.Address.ValueString(), cfg.Address.ValueString(), state.Address.ValueString()))
	return diags
}

// importAdoptedVIP is lbhost_vip's import of a hand-made instance on its
// host: the VIP as the instance has it, keepalived_instance its name, not
// in effect until the apply moves it into lbhost's fragment (in place).
func (r *vipResource) importAdoptedVIP(ctx context.Context, a adoptID, resp *resource.ImportStateResponse) {
	summary := "import lbhost_vip " + a.owner
	h, err := r.c.host(ctx)
	var hm *keepalived.Handmade
	if err == nil {
		hm, err = h.ReadHandmade(ctx, a.instance)
	}
	if err == nil {
		if err = host.CheckInPool(a.pool, hm.Address); err != nil {
			err = fmt.Errorf("vrrp_instance %s holds %s: %w", a.instance, hm.Address, err)
		}
	}
	if err != nil {
		addError(&resp.Diagnostics, summary, err)
		return
	}
	m := vipModel{ID: types.StringValue(a.owner), Owner: types.StringValue(a.owner), Pool: types.StringValue(a.pool.String()),
		Address: types.StringValue(hm.Address), Interface: types.StringValue(hm.AddressInterface), Share: types.StringNull(),
		InEffect: types.BoolValue(false), Standby: types.BoolValue(false), VRRP: fromInstance(hm.Instance, nil),
		KeepalivedInstance: types.StringValue(a.instance)}
	m.VRRP.VRIDRange = types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// readAdopting is Read of an adopted VIP the apply has not moved yet:
// the hand-made instance still in keepalived's main configuration is a
// VIP not in effect (kept in state; the next apply moves it), gone is gone.
func readAdopting(ctx context.Context, h *host.Host, m vipModel) (*host.HeldVIP, error) {
	hm, err := h.ReadHandmade(ctx, m.KeepalivedInstance.ValueString())
	switch {
	case host.IsNoInstance(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return nil, &host.Drift{Reason: fmt.Sprintf("vrrp_instance %s (%s) is still in keepalived's main configuration on %s: the next apply moves it into lbhost's fragment",
		hm.Name, hm.Address, h.T)}
}
