// Deep copies of the AddressPool types (written by hand: controller-gen
// would be a tool dependency for four types), as runtime.Object needs.

package poolapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies p into out.
func (p *AddressPool) DeepCopyInto(out *AddressPool) {
	*out = *p
	out.TypeMeta = p.TypeMeta
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.Spec.DeepCopyInto(&out.Spec)
	p.Status.DeepCopyInto(&out.Status)
}

// DeepCopy is a deep copy of p.
func (p *AddressPool) DeepCopy() *AddressPool {
	if p == nil {
		return nil
	}
	out := new(AddressPool)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject is DeepCopy as a runtime.Object.
func (p *AddressPool) DeepCopyObject() runtime.Object { return p.DeepCopy() }

// DeepCopyInto copies s into out.
func (s *AddressPoolSpec) DeepCopyInto(out *AddressPoolSpec) {
	*out = *s
	out.Addresses = cloneStrings(s.Addresses)
	if s.AutoAssign != nil {
		v := *s.AutoAssign
		out.AutoAssign = &v
	}
	out.Namespaces = cloneStrings(s.Namespaces)
	out.NamespaceSelectors = cloneStrings(s.NamespaceSelectors)
	out.ServiceSelectors = cloneStrings(s.ServiceSelectors)
	if s.Network != nil {
		n := *s.Network
		n.Hosts = cloneStrings(s.Network.Hosts)
		out.Network = &n
	}
}

// DeepCopy is a deep copy of s.
func (s *AddressPoolSpec) DeepCopy() *AddressPoolSpec {
	out := new(AddressPoolSpec)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies s into out.
func (s *AddressPoolStatus) DeepCopyInto(out *AddressPoolStatus) {
	*out = *s
	if s.IPv4 != nil {
		v := *s.IPv4
		out.IPv4 = &v
	}
	if s.IPv6 != nil {
		v := *s.IPv6
		out.IPv6 = &v
	}
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies l into out.
func (l *AddressPoolList) DeepCopyInto(out *AddressPoolList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]AddressPool, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopyObject is a deep copy of l as a runtime.Object.
func (l *AddressPoolList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(AddressPoolList)
	l.DeepCopyInto(out)
	return out
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}
