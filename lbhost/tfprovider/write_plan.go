// writePlan: the Create and Update of the resources whose host write is
// idempotent and records nothing when it fails (lbhost_route,
// lbhost_routed_vip's Update).

package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
)

// writePlan writes the planned model to the host with write and records it
// in state; an error is a diagnostic named by summary, and the state is
// left as it was.
func writePlan[M any](ctx context.Context, plan tfsdk.Plan, state *tfsdk.State, diags *diag.Diagnostics, summary func(M) string, write func(*M) error) {
	var m M
	diags.Append(plan.Get(ctx, &m)...)
	if diags.HasError() {
		return
	}
	if err := write(&m); err != nil {
		addError(diags, summary(m), err)
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}
