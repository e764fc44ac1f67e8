package config

// The admin's allow-list of adoptions: which existing load balancers the
// Services of a namespace may adopt with tfccm.io/adopt, and whether they
// may keep them at delete with tfccm.io/retain-on-delete. Adopting takes a
// load balancer over (a later Service delete destroys it), so a namespace
// tenant may name only ids the cluster admin listed for their namespace.

import (
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Adopt is one namespace's allowed adoptions.
type Adopt struct {
	Namespace string   `hcl:"namespace,label" doc:"The namespace whose Services may adopt these load balancers."`
	IDs       []string `hcl:"ids,optional" doc:"The ids (as the template set's import takes them: the load balancer's, and for OpenStack its listeners' and pools') a Service of the namespace may name in tfccm.io/adopt. Any other id is refused: a tenant cannot take over (and later destroy) another team's or the platform's load balancer."`
	Retain    bool     `hcl:"retain,optional" doc:"Lets the Services of the namespace keep their load balancer in the cloud when they are deleted (tfccm.io/retain-on-delete): the delete forgets it instead of destroying it. Off by default: a kept load balancer is no longer managed by tfccm and is still billed, so the admin decides who may leave one behind."`
}

// AllowsRetain reports whether the Services of namespace may keep their
// load balancer at delete (tfccm.io/retain-on-delete).
func (lb *LoadBalancer) AllowsRetain(namespace string) bool {
	for _, a := range lb.Adoptions {
		if a.Namespace == namespace {
			return a.Retain
		}
	}
	return false
}

// AllowsAdoption reports whether a Service in namespace may adopt the
// object with id: whether an adopt block for the namespace lists it.
func (lb *LoadBalancer) AllowsAdoption(namespace, id string) bool {
	for _, a := range lb.Adoptions {
		if a.Namespace != namespace {
			continue
		}
		for _, allowed := range a.IDs {
			if allowed == id {
				return true
			}
		}
	}
	return false
}

// finishAdoptions checks the adopt blocks: a namespace name each, no
// namespace twice, ids non-empty and free of spaces and control
// characters, and no id allowed to two namespaces (one load balancer has
// one owner).
func (lb *LoadBalancer) finishAdoptions(k *checker) {
	namespaces := map[string]bool{}
	owner := map[string]string{}
	for _, a := range lb.Adoptions {
		if errs := validation.IsDNS1123Label(a.Namespace); len(errs) > 0 {
			k.errAt(at("load_balancer", "adopt"), "Invalid adopt block", fmt.Sprintf("load_balancer.adopt %q: not a namespace name: %s.", a.Namespace, strings.Join(errs, "; ")))
		}
		if namespaces[a.Namespace] {
			k.errAt(at("load_balancer", "adopt"), "Invalid adopt block", fmt.Sprintf("load_balancer.adopt %q appears twice; list every id of the namespace in one block.", a.Namespace))
		}
		namespaces[a.Namespace] = true
		for _, id := range a.IDs {
			if id == "" || strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
				k.errAt(at("load_balancer", "adopt"), "Invalid adopt id", fmt.Sprintf("load_balancer.adopt %q: id %q is empty or holds spaces or control characters.", a.Namespace, id))
				continue
			}
			if prev, ok := owner[id]; ok && prev != a.Namespace {
				k.errAt(at("load_balancer", "adopt"), "Invalid adopt id", fmt.Sprintf("load_balancer.adopt: id %q is allowed to namespaces %q and %q; a load balancer can have one owner.", id, prev, a.Namespace))
			}
			owner[id] = a.Namespace
		}
	}
}
