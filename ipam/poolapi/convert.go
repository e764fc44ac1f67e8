// The conversion of an AddressPool object into the address pool package
// ipam allocates from, checked by the cloud config's rules.

package poolapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tfccm/tfccm/config"
)

// FromUnstructured decodes an AddressPool read by a dynamic client.
func FromUnstructured(u *unstructured.Unstructured) (*AddressPool, error) {
	var p AddressPool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return nil, fmt.Errorf("AddressPool %q: %w", u.GetName(), err)
	}
	return &p, nil
}

// InvalidError lists the problems of a pool the apiserver's validation
// let through (a selector that does not parse, host bits set).
type InvalidError struct {
	Pool     string
	Problems []string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("AddressPool %q: %s", e.Pool, strings.Join(e.Problems, " "))
}

// ToConfig is the pool p declares, finished by config.FinishPool: the
// error (an *InvalidError) names each problem, and then the pool must not
// serve.
func (p *AddressPool) ToConfig() (config.AddressPool, error) {
	s := p.Spec.DeepCopy()
	c := config.AddressPool{
		Name:                  p.Name,
		Addresses:             s.Addresses,
		AutoAssign:            s.AutoAssign,
		AvoidBuggyIPs:         s.AvoidBuggyIPs,
		Priority:              s.Priority,
		Namespaces:            s.Namespaces,
		NamespaceSelectors:    s.NamespaceSelectors,
		ServiceSelectors:      s.ServiceSelectors,
		ShareAcrossNamespaces: s.ShareAcrossNamespaces,
	}
	if n := s.Network; n != nil {
		c.Network = &config.PoolNetwork{Interface: n.Interface, Hosts: n.Hosts, Subnet: n.Subnet, Subnet6: n.Subnet6}
	}
	problems := config.FinishPool(&c)
	if n := s.Network; n != nil && n.NodeSelector != "" {
		if _, err := labels.Parse(n.NodeSelector); err != nil {
			problems = append(problems, fmt.Sprintf("network: nodeSelector %q: %v.", n.NodeSelector, err))
		}
	}
	if len(problems) > 0 {
		return config.AddressPool{}, &InvalidError{Pool: p.Name, Problems: problems}
	}
	return c, nil
}
