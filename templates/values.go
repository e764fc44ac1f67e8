package templates

import (
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
)

// Node labels read into the nodes input.
const (
	labelZone         = "topology.kubernetes.io/zone"
	labelRegion       = "topology.kubernetes.io/region"
	labelInstanceType = "node.kubernetes.io/instance-type"
)

// droppedAnnotations are never passed to templates: kubectl's copy of the
// whole object is noise that would only churn the workspace.
var droppedAnnotations = map[string]bool{"kubectl.kubernetes.io/last-applied-configuration": true}

// str makes a cty string. Kubernetes strings are UTF-8 already; invalid
// bytes (possible only from hand-written input) become U+FFFD.
func str(s string) cty.Value { return cty.StringVal(strings.ToValidUTF8(s, "\uFFFD")) }

// optStr is null for "".
func optStr(s string) cty.Value {
	if s == "" {
		return cty.NullVal(cty.String)
	}
	return str(s)
}

func optNum(n int32) cty.Value {
	if n == 0 {
		return cty.NullVal(cty.Number)
	}
	return cty.NumberIntVal(int64(n))
}

func strMap(m map[string]string, drop map[string]bool) cty.Value {
	vals := map[string]cty.Value{}
	for k, v := range m {
		if drop[k] {
			continue
		}
		vals[strings.ToValidUTF8(k, "\uFFFD")] = str(v)
	}
	if len(vals) == 0 {
		return cty.MapValEmpty(cty.String)
	}
	return cty.MapVal(vals)
}

func strList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = str(s)
	}
	return cty.ListVal(vals)
}

func addressesVal(addrs []corev1.NodeAddress) cty.Value {
	if len(addrs) == 0 {
		return cty.ListValEmpty(addressType)
	}
	vals := make([]cty.Value, len(addrs))
	for i, a := range addrs {
		vals[i] = cty.ObjectVal(map[string]cty.Value{"type": str(string(a.Type)), "address": str(a.Address)})
	}
	return cty.ListVal(vals)
}

// nodesVal is the nodes input: sorted by name.
func nodesVal(nodes []*corev1.Node) cty.Value {
	sorted := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if n != nil {
			sorted = append(sorted, n)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	if len(sorted) == 0 {
		return cty.ListValEmpty(NodeType)
	}
	vals := make([]cty.Value, len(sorted))
	for i, n := range sorted {
		vals[i] = cty.ObjectVal(map[string]cty.Value{
			"name":          str(n.Name),
			"provider_id":   optStr(n.Spec.ProviderID),
			"addresses":     addressesVal(n.Status.Addresses),
			"zone":          optStr(n.Labels[labelZone]),
			"region":        optStr(n.Labels[labelRegion]),
			"instance_type": optStr(n.Labels[labelInstanceType]),
			"labels":        strMap(n.Labels, nil),
		})
	}
	return cty.ListVal(vals)
}

func portsVal(ports []corev1.ServicePort) cty.Value {
	et := ServiceType.AttributeType("ports").ElementType()
	if len(ports) == 0 {
		return cty.ListValEmpty(et)
	}
	vals := make([]cty.Value, len(ports))
	for i, p := range ports {
		app := cty.NullVal(cty.String)
		if p.AppProtocol != nil {
			app = str(*p.AppProtocol)
		}
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		vals[i] = cty.ObjectVal(map[string]cty.Value{
			"name":         str(p.Name),
			"protocol":     str(proto),
			"port":         cty.NumberIntVal(int64(p.Port)),
			"node_port":    optNum(p.NodePort),
			"app_protocol": app,
		})
	}
	return cty.ListVal(vals)
}
