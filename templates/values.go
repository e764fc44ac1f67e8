package templates

import (
	"encoding/binary"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/annotations"
)

// Node labels read into the nodes input.
const (
	labelZone         = "topology.kubernetes.io/zone"
	labelRegion       = "topology.kubernetes.io/region"
	labelInstanceType = "node.kubernetes.io/instance-type"
)

// droppedAnnotations are never passed to templates: kubectl's copy of the
// whole object is noise that would only churn the workspace, and a review
// approval must not change the workspace whose plan it approves.
var droppedAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	annotations.ApprovedPlan.Name:                      true,
}

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

// nodesVal is the nodes input: sorted by name. The service controller
// renders every LoadBalancer Service over the same nodes on each node
// change, so the value of the most recent node sets is cached, keyed by
// everything it is built from: a node that changed in any field it reads
// never hits a stale entry. cty values are immutable, so sharing is safe.
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
	kb := keyBufs.Get().(*[]byte)
	defer keyBufs.Put(kb)
	*kb = appendNodesKey((*kb)[:0], sorted)
	if v, ok := nodesCache.get(*kb); ok {
		return v
	}
	v := buildNodesVal(sorted)
	nodesCache.put(*kb, v)
	return v
}

// keyBufs recycles nodesVal's key buffers.
var keyBufs = sync.Pool{New: func() any { return new([]byte) }}

// buildNodesVal builds the nodes input of sorted nodes (at least one).
func buildNodesVal(sorted []*corev1.Node) cty.Value {
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

// appendNodesKey encodes, unambiguously, every field of nodes that
// buildNodesVal reads, in order.
func appendNodesKey(b []byte, nodes []*corev1.Node) []byte {
	var labelKeys []string
	for _, n := range nodes {
		b = appendKeyString(b, n.Name)
		b = appendKeyString(b, n.Spec.ProviderID)
		b = binary.AppendUvarint(b, uint64(len(n.Status.Addresses)))
		for _, a := range n.Status.Addresses {
			b = appendKeyString(b, string(a.Type))
			b = appendKeyString(b, a.Address)
		}
		labelKeys = labelKeys[:0]
		for k := range n.Labels {
			labelKeys = append(labelKeys, k)
		}
		slices.Sort(labelKeys)
		b = binary.AppendUvarint(b, uint64(len(labelKeys)))
		for _, k := range labelKeys {
			b = appendKeyString(b, k)
			b = appendKeyString(b, n.Labels[k])
		}
	}
	return b
}

func appendKeyString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// nodesCacheSize is how many node sets nodesVal remembers: the current
// one, and the previous one while renders of a change are still running.
const nodesCacheSize = 2

var nodesCache = &valueCache{max: nodesCacheSize}

// valueCache maps content keys to values; it holds at most max entries,
// dropping the least recently used.
type valueCache struct {
	mu      sync.Mutex
	max     int
	entries []valueCacheEntry // least recently used first
}

type valueCacheEntry struct {
	key string
	val cty.Value
}

func (c *valueCache) get(key []byte) (cty.Value, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.key == string(key) {
			copy(c.entries[i:], c.entries[i+1:])
			c.entries[len(c.entries)-1] = e
			return e.val, true
		}
	}
	return cty.NilVal, false
}

func (c *valueCache) put(key []byte, v cty.Value) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.key == string(key) {
			return // a concurrent render got there first
		}
	}
	if len(c.entries) >= c.max {
		c.entries = slices.Delete(c.entries, 0, len(c.entries)-c.max+1)
	}
	c.entries = append(c.entries, valueCacheEntry{string(key), v})
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
