// The conversion of MetalLB's pools (with the announcements that select
// them) into AddressPool objects, and the notes on what did not carry.

package metallb

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tfccm/tfccm/ipam/poolapi"
)

// SourceAnnotation, on an AddressPool converted from MetalLB's, names
// the IPAddressPool it came from ("metallb-system/web").
const SourceAnnotation = "tfccm.io/converted-from-metallb"

// Objects are MetalLB's objects of a cluster or a dump.
type Objects struct {
	Pools []IPAddressPool
	L2    []Advertisement
	BGP   []Advertisement
}

// Note is what the conversion of one MetalLB object could not carry.
type Note struct {
	// Object is "IPAddressPool metallb-system/web".
	Object  string
	Message string
}

func (n Note) String() string { return n.Object + ": " + n.Message }

// Decode sorts MetalLB's objects out of items (other kinds are skipped).
func Decode(items []unstructured.Unstructured) (Objects, error) {
	var o Objects
	for i := range items {
		u := &items[i]
		if u.GroupVersionKind().Group != Group {
			continue
		}
		var err error
		switch u.GetKind() {
		case "IPAddressPool":
			var p IPAddressPool
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p)
			o.Pools = append(o.Pools, p)
		case "L2Advertisement", "BGPAdvertisement":
			var a Advertisement
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a)
			if u.GetKind() == "L2Advertisement" {
				o.L2 = append(o.L2, a)
			} else {
				o.BGP = append(o.BGP, a)
			}
		}
		if err != nil {
			return Objects{}, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return o, nil
}

// Convert is one AddressPool per IPAddressPool, by name, and a Note for
// each thing without an AddressPool equivalent. The pool keeps its name
// (what Services name in MetalLB's address-pool annotation), addresses,
// autoAssign, avoidBuggyIPs and serviceAllocation (selectors in kubectl's
// syntax); the L2Advertisements that announce it give its network's
// interface and nodeSelector when they name exactly one of each.
func Convert(objs Objects) ([]*poolapi.AddressPool, []Note) {
	pools := slices.Clone(objs.Pools)
	slices.SortStableFunc(pools, func(a, b IPAddressPool) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
	var out []*poolapi.AddressPool
	var notes []Note
	taken := map[string]string{}
	for i := range pools {
		p := &pools[i]
		id := "IPAddressPool " + p.Namespace + "/" + p.Name
		note := func(format string, args ...any) { notes = append(notes, Note{id, fmt.Sprintf(format, args...)}) }
		if other, ok := taken[p.Name]; ok {
			note("skipped: AddressPools are cluster-wide and %s has the name %q already; rename one of them.", other, p.Name)
			continue
		}
		taken[p.Name] = p.Namespace + "/" + p.Name
		ap := &poolapi.AddressPool{
			TypeMeta: metav1.TypeMeta{APIVersion: poolapi.Group + "/" + poolapi.Version, Kind: poolapi.Kind},
			ObjectMeta: metav1.ObjectMeta{
				Name: p.Name,
				// The MetalLB pool's namespace marks it as MetalLB's in the
				// controller's merge (ipam.Merge); Clean drops it.
				Namespace:         p.Namespace,
				Annotations:       map[string]string{SourceAnnotation: p.Namespace + "/" + p.Name},
				CreationTimestamp: p.CreationTimestamp,
				Generation:        p.Generation,
			},
			Spec: poolapi.AddressPoolSpec{
				Addresses:     slices.Clone(p.Spec.Addresses),
				AutoAssign:    p.Spec.AutoAssign,
				AvoidBuggyIPs: p.Spec.AvoidBuggyIPs,
			},
		}
		if sa := p.Spec.ServiceAllocation; sa != nil {
			ap.Spec.Priority = sa.Priority
			ap.Spec.Namespaces = slices.Clone(sa.Namespaces)
			ap.Spec.NamespaceSelectors = selectors(sa.NamespaceSelectors, "serviceAllocation.namespaceSelectors", note)
			ap.Spec.ServiceSelectors = selectors(sa.ServiceSelectors, "serviceAllocation.serviceSelectors", note)
		}
		ap.Spec.Network = network(p, objs, note)
		out = append(out, ap)
	}
	return out, notes
}

// Clean is ap as a manifest to apply: the metadata of the MetalLB object
// it came from (namespace, creation time, generation) dropped.
func Clean(ap *poolapi.AddressPool) *poolapi.AddressPool {
	out := &poolapi.AddressPool{TypeMeta: ap.TypeMeta, Spec: *ap.Spec.DeepCopy()}
	out.Name = ap.Name
	out.Annotations = ap.Annotations
	return out
}

// selectors is ss in kubectl's syntax. An empty selector matches
// everything, so the list restricts nothing: none is kept.
func selectors(ss []metav1.LabelSelector, field string, note func(string, ...any)) []string {
	var out []string
	for i := range ss {
		sel, err := metav1.LabelSelectorAsSelector(&ss[i])
		if err != nil {
			note("%s[%d] is not converted: %v.", field, i, err)
			continue
		}
		if sel.Empty() {
			note("%s[%d] is empty and matches everything: the pool is not restricted by %s.", field, i, field)
			return nil
		}
		out = append(out, sel.String())
	}
	return out
}

// announces reports whether a announces pool p: it names p, one of its
// pool selectors matches p's labels, or it selects no pool (every pool of
// its namespace).
func announces(a *Advertisement, p *IPAddressPool) bool {
	if a.Namespace != p.Namespace {
		return false
	}
	if len(a.Spec.IPAddressPools) == 0 && len(a.Spec.IPAddressPoolSelectors) == 0 {
		return true
	}
	if slices.Contains(a.Spec.IPAddressPools, p.Name) {
		return true
	}
	for i := range a.Spec.IPAddressPoolSelectors {
		if sel, err := metav1.LabelSelectorAsSelector(&a.Spec.IPAddressPoolSelectors[i]); err == nil && sel.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}

// network is the pool's segment from the L2Advertisements that announce
// it: one interface and one node selector among them all carry; several,
// or none for some (every interface, every node), leave the field unset.
func network(p *IPAddressPool, objs Objects, note func(string, ...any)) *poolapi.Network {
	for i := range objs.BGP {
		if announces(&objs.BGP[i], p) {
			note("announced by BGPAdvertisement %s: BGP announcements are not converted (peers, communities and BFD are the BGP mode's configuration).", objs.BGP[i].Name)
		}
	}
	var ifaces, nodeSels []string
	allIfaces, allNodes, l2 := false, false, 0
	for i := range objs.L2 {
		a := &objs.L2[i]
		if !announces(a, p) {
			continue
		}
		l2++
		if len(a.Spec.Interfaces) == 0 {
			allIfaces = true
		}
		for _, f := range a.Spec.Interfaces {
			if !slices.Contains(ifaces, f) {
				ifaces = append(ifaces, f)
			}
		}
		if len(a.Spec.NodeSelectors) == 0 {
			allNodes = true
		}
		for j := range a.Spec.NodeSelectors {
			sel, err := metav1.LabelSelectorAsSelector(&a.Spec.NodeSelectors[j])
			switch {
			case err != nil:
				note("L2Advertisement %s: nodeSelectors[%d] is not converted: %v.", a.Name, j, err)
			case sel.Empty():
				allNodes = true
			case !slices.Contains(nodeSels, sel.String()):
				nodeSels = append(nodeSels, sel.String())
			}
		}
	}
	if l2 == 0 {
		if !slices.ContainsFunc(objs.BGP, func(a Advertisement) bool { return announces(&a, p) }) {
			note("no L2Advertisement or BGPAdvertisement announces it (MetalLB allocates its addresses but does not announce them); tfccm's load balancers will.")
		}
		return nil
	}
	n := &poolapi.Network{}
	switch {
	case allIfaces && len(ifaces) > 0:
		note("announced on every interface by one L2Advertisement and on %s by another: network.interface is left to the template's default.", strings.Join(ifaces, ", "))
	case len(ifaces) > 1:
		note("announced on interfaces %s: an AddressPool has one network.interface; left to the template's default (one pool per interface keeps them apart).", strings.Join(ifaces, ", "))
	case len(ifaces) == 1:
		n.Interface = ifaces[0]
	}
	switch {
	case allNodes && len(nodeSels) > 0:
		note("announced from every node by one L2Advertisement and from nodes \"%s\" by another: network.nodeSelector is left unset (every node).", strings.Join(nodeSels, `", "`))
	case len(nodeSels) > 1:
		note("announced from the nodes of several selectors (\"%s\"): an AddressPool has one network.nodeSelector; left unset (every node).", strings.Join(nodeSels, `", "`))
	case len(nodeSels) == 1:
		n.NodeSelector = nodeSels[0]
	}
	if n.Interface == "" && n.NodeSelector == "" {
		return nil
	}
	return n
}
