package templates

// Adoption: a Service's tfccm.io/adopt reaches the template as the input
// adopt (a map of strings: "id" and the parts' ids, or null), which the
// template's import blocks read; the id is never written into HCL. Only
// ids the cluster admin allows for the Service's namespace pass. Keeping
// the load balancer at delete (tfccm.io/retain-on-delete) is allowed per
// namespace the same way.

import (
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
)

// AdoptVar is the template input that carries the adoption.
const AdoptVar = workspace.AdoptVar

// adoptVal checks svc's tfccm.io/adopt against the admin's allow-list and
// the module, and returns the adopt input; cty.NilVal (not written: the
// template's default null applies) when the Service adopts nothing.
func adoptVal(cfg *config.Config, m *Module, svc *corev1.Service) (cty.Value, error) {
	a, set, err := annotations.Adopt.Get(svc.Annotations)
	if err != nil {
		return cty.NilVal, err
	}
	if !set {
		return cty.NilVal, nil
	}
	_, declared := m.Variables[AdoptVar]
	var refused []string
	for _, id := range a.IDs() {
		if !cfg.LoadBalancer.AllowsAdoption(svc.Namespace, id) {
			refused = append(refused, annotations.Quote(id))
		}
	}
	if len(refused) > 0 {
		return cty.NilVal, fmt.Errorf("annotation %s: namespace %s may not adopt %s: the cluster admin allows a namespace's Services to adopt only the ids listed in load_balancer { adopt %q { ids = [...] } } of the cloud config; nothing is planned",
			annotations.Adopt.Name, svc.Namespace, strings.Join(refused, ", "), svc.Namespace)
	}
	if !declared {
		return cty.NilVal, fmt.Errorf("annotation %s: template %s cannot adopt a load balancer (it declares no %q variable and no import blocks); nothing is planned", annotations.Adopt.Name, m.Key, AdoptVar)
	}
	vals := map[string]cty.Value{"id": str(a.ID)}
	for _, k := range a.PartNames() {
		vals[k] = str(a.Parts[k])
	}
	return cty.MapVal(vals), nil
}

// retainOnDelete checks svc's tfccm.io/retain-on-delete against the admin's
// allow-list: whether deleting svc forgets its load balancer instead of
// destroying it (workspace.Spec.Retain).
func retainOnDelete(cfg *config.Config, svc *corev1.Service) (bool, error) {
	retain, _, err := annotations.RetainOnDelete.Get(svc.Annotations)
	if err != nil || !retain {
		return false, err
	}
	if !cfg.LoadBalancer.AllowsRetain(svc.Namespace) {
		return false, fmt.Errorf("annotation %s: namespace %s may not keep its load balancers when a Service is deleted: the cluster admin allows it with load_balancer { adopt %q { retain = true } } in the cloud config; nothing is planned, and deleting the Service destroys its load balancer",
			annotations.RetainOnDelete.Name, svc.Namespace, svc.Namespace)
	}
	return true, nil
}
