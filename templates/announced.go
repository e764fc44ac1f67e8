package templates

// The take-over from MetalLB is one-way: a load balancer once applied
// announcing its addresses (service.announce = true) is never prepared
// again, whatever the take-over list says later. Announced reads that
// from what was applied: the workspace's last applied files (its work
// dir) or the state backend's catalog entry of them (a new pod whose work
// dir is empty). The controller decides with it (ccm/lbcontroller,
// takeover.go).

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
)

// Announced reports whether a load balancer workspace's files, as
// applied, announced its addresses: its inputs' service.announce. Inputs
// without it were rendered before a load balancer could be prepared, so
// they announced. An unreadable inputs file is an error: the caller must
// not decide without it.
func Announced(files map[string][]byte) (bool, error) {
	tfvars, ok := files[TfvarsFile]
	if !ok {
		return false, fmt.Errorf("announced: the applied files hold no %s", TfvarsFile)
	}
	_, service, err := ReadAppliedInputs(tfvars)
	if err != nil {
		return false, fmt.Errorf("announced: %w", err)
	}
	if service.IsNull() || !service.Type().IsObjectType() {
		return false, fmt.Errorf("announced: read %s: service is not an object", TfvarsFile)
	}
	if !service.Type().HasAttribute("announce") {
		return true, nil
	}
	a := service.GetAttr("announce")
	if a.IsNull() || !a.IsKnown() || !a.Type().Equals(cty.Bool) {
		return false, fmt.Errorf("announced: read %s: service.announce is not a bool", TfvarsFile)
	}
	return a.True(), nil
}
