package templates

// The allow-list of tfccm.io/vars: which settings a Service may set for
// itself. The cluster admin owns load_balancer.settings; a namespace
// tenant owns the Service and so its annotations. A key the admin did not
// list in load_balancer.service_vars is refused here, in the one render
// entry every path shares (the controller, tfccm render, tfccm plan, the
// fleet plan), before any value is read.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
)

// checkServiceVars refuses every key of vars (the Service's tfccm.io/vars)
// that lb.service_vars does not list, naming each refused key and the list.
func checkServiceVars(lb *config.LoadBalancer, vars map[string]json.RawMessage) error {
	var refused []string
	for _, k := range sortedKeys(vars) {
		if !lb.AllowsServiceVar(k) {
			refused = append(refused, annotations.Quote(k))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	what := "key " + refused[0] + " is"
	if len(refused) > 1 {
		what = "keys " + strings.Join(refused, ", ") + " are"
	}
	return fmt.Errorf("annotation %s: %s not a setting a Service may set (%s); nothing is applied",
		annotations.Vars.Name, what, allowedText(lb.ServiceVars))
}

// allowedText says what load_balancer.service_vars allows.
func allowedText(allowed []string) string {
	if len(allowed) == 0 {
		return "load_balancer.service_vars of the cloud config allows none"
	}
	return "load_balancer.service_vars of the cloud config allows: " + strings.Join(allowed, ", ")
}

// orPerService adds where else a required key may be set: in the
// Service's tfccm.io/vars, if the admin allows it there.
func orPerService(key string, perService func(string) bool) string {
	if perService != nil && perService(key) {
		return " or in annotation " + annotations.Vars.Name
	}
	return ""
}
