// The pools the book allocates from: the cloud config's address_pool
// blocks and the AddressPool objects, merged by one precedence rule, and
// each object's verdict (the condition its status shows).

package ipam

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// Verdict is what the book made of one pool object: the condition type
// its status shows (poolapi.ConditionReady, ConditionOverlaps or
// ConditionInvalid), the reason in words, and the version of the object
// that serves (nil: none). A MetalLB IPAddressPool read with compat {
// metallb = true } has its Namespace (tfccm's AddressPools have none) and
// no status of tfccm's.
type Verdict struct {
	Pool      string
	Namespace string
	Type      string
	Message   string
	Serving   *poolapi.AddressPool
}

// Serves reports whether the object's current spec serves Services.
func (v Verdict) Serves() bool { return v.Type == poolapi.ConditionReady }

// FromMetalLB reports whether the verdict is on a MetalLB IPAddressPool.
func (v Verdict) FromMetalLB() bool { return v.Namespace != "" }

// fromMetalLB: a MetalLB IPAddressPool converted as it is (package
// ipam/metallb) keeps its namespace; tfccm's AddressPools are
// cluster-scoped.
func fromMetalLB(o *poolapi.AddressPool) bool { return o.Namespace != "" }

// key is o's key in the last served versions.
func key(o *poolapi.AddressPool) string {
	if fromMetalLB(o) {
		return o.Namespace + "/" + o.Name
	}
	return o.Name
}

// Merge is the pools the book allocates from: the cloud config's blocks
// (hcl, already checked by the config) first, then tfccm's AddressPool
// objects, oldest first (then by name), then MetalLB's IPAddressPools
// (compat { metallb = true }; converted by package ipam/metallb), oldest
// first. An object is refused when its spec has a problem the apiserver
// cannot see (Invalid), when a pool before it has its name (Invalid), or
// when one of its ranges overlaps a pool taken before it (Overlaps,
// naming that pool): a refused object never takes an address from a pool
// already serving. A refused edit leaves the object's last served version
// (lastServed, by key) serving when that one still passes, so a bad edit
// never takes a pool in use away from its Services. An object covering a
// reserved address (a node's or an LB host's) is Invalid, naming whose it
// is.
func Merge(hcl []config.AddressPool, objects []*poolapi.AddressPool, lastServed map[string]*poolapi.AddressPool, reserved Reserved) ([]config.AddressPool, []Verdict) {
	pools := slices.Clone(hcl)
	named := map[string]string{}
	for _, p := range hcl {
		named[p.Name] = fmt.Sprintf("The cloud config declares an address_pool %q: the block is used, this object is not.", p.Name)
	}
	objects = slices.Clone(objects)
	slices.SortStableFunc(objects, func(a, b *poolapi.AddressPool) int {
		if fa, fb := fromMetalLB(a), fromMetalLB(b); fa != fb {
			if fa {
				return 1
			}
			return -1
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(key(a), key(b))
	})
	var verdicts []Verdict
	for _, o := range objects {
		v, p := judge(o, pools, len(hcl), named, reserved)
		if !v.Serves() {
			if last := lastServed[key(o)]; last != nil {
				if lv, lp := judge(last, pools, len(hcl), named, reserved); lv.Serves() {
					v.Serving, p = last, lp
					v.Message += fmt.Sprintf(" Its last valid spec (generation %d) keeps serving.", last.Generation)
				}
			}
		}
		if v.Serving != nil {
			pools = append(pools, p)
			if _, ok := named[o.Name]; !ok {
				named[o.Name] = fmt.Sprintf("AddressPool %q is used, this MetalLB IPAddressPool of the same name is not (tfccm's AddressPools come first).", o.Name)
			}
		}
		verdicts = append(verdicts, v)
	}
	return pools, verdicts
}

// judge is the verdict on o among the pools taken so far (the first
// blocks of them the cloud config's; named: why a name is taken), and its
// pool.
func judge(o *poolapi.AddressPool, taken []config.AddressPool, blocks int, named map[string]string, reserved Reserved) (Verdict, config.AddressPool) {
	v := Verdict{Pool: o.Name, Namespace: o.Namespace, Type: poolapi.ConditionReady, Message: "The pool serves Services.", Serving: o}
	p, err := o.ToConfig()
	switch {
	case named[o.Name] != "":
		v.Type, v.Message = poolapi.ConditionInvalid, named[o.Name]
	case err != nil:
		v.Type, v.Message = poolapi.ConditionInvalid, err.Error()
	case reserved.coveredBy(&p) != "":
		v.Type, v.Message = poolapi.ConditionInvalid, fmt.Sprintf("AddressPool %q covers %s: a load balancer there would take that address from it.", o.Name, reserved.coveredBy(&p))
	default:
		v = overlapVerdict(v, &p, taken, blocks)
	}
	if !v.Serves() {
		v.Serving = nil
	}
	return v, p
}

// overlapVerdict is v, or an Overlaps verdict naming the first pool of
// taken (the first blocks of them the cloud config's) that p overlaps.
func overlapVerdict(v Verdict, p *config.AddressPool, taken []config.AddressPool, blocks int) Verdict {
	for i := range taken {
		if r, or, ok := config.Overlap(p, &taken[i]); ok {
			kind := "AddressPool"
			if i < blocks {
				kind = "the cloud config's address_pool"
			}
			v.Type = poolapi.ConditionOverlaps
			v.Message = fmt.Sprintf("%s overlaps %s of %s %q, which keeps it: this pool serves nothing until the overlap is removed.", r, or, kind, taken[i].Name)
			return v
		}
	}
	return v
}

// SetObjectPools makes the book allocate from the cloud config's pools and
// objects (Merge) from the next allocation on, and returns each object's
// verdict. A Service whose address is in no pool any more (its pool
// deleted) gets a new one at its next assignment.
func (b *Book) SetObjectPools(objects []*poolapi.AddressPool) []Verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	var reserved Reserved
	if b.reserved != nil {
		reserved = b.reserved()
	}
	pools, verdicts := Merge(b.hcl, objects, b.served, reserved)
	b.alloc.SetPools(pools)
	b.served = map[string]*poolapi.AddressPool{}
	for _, v := range verdicts {
		if v.Serving != nil {
			b.served[key(v.Serving)] = v.Serving
		}
	}
	b.pooled = len(pools) > 0
	b.needNamespaces = false
	for _, p := range pools {
		b.needNamespaces = b.needNamespaces || len(p.NamespaceSels) > 0
	}
	return verdicts
}

// Usage counts a pool's addresses per family (Allocator.Usage).
func (b *Book) Usage(pool string) (v4, v6 FamilyUsage, ok bool) { return b.alloc.Usage(pool) }

// WithObjectPools is cfg with the objects' pools merged in (Merge, with no
// last served versions; nodes' addresses reserved), for the CLI, whose book is built from one config:
// the same pools as the controller's book, so `tfccm render` and `tfccm
// plan` give a Service the addresses the controller gives it.
func WithObjectPools(cfg *config.Config, objects []*poolapi.AddressPool, nodes []*corev1.Node) (*config.Config, []Verdict) {
	if len(objects) == 0 {
		return cfg, nil
	}
	reserved := NodeAddresses(nodes)
	maps.Copy(reserved, LBHostAddresses(cfg))
	pools, verdicts := Merge(cfg.LoadBalancer.AddressPools, objects, nil, reserved)
	out, lb := *cfg, *cfg.LoadBalancer
	lb.AddressPools = pools
	out.LoadBalancer = &lb
	return &out, verdicts
}

// Reserved are addresses no object pool may cover, with whose they are
// ("the address 10.0.0.5 of node node-a").
type Reserved map[netip.Addr]string

// NodeAddresses reserves the nodes' InternalIP and ExternalIP addresses.
func NodeAddresses(nodes []*corev1.Node) Reserved {
	r := Reserved{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				r[ip.Unmap()] = fmt.Sprintf("the address %s of node %s", ip, n.Name)
			}
		}
	}
	return r
}

// LBHostAddresses reserves the LB hosts' own addresses: address and
// address6 of each load_balancer.settings.hosts entry (the baremetal
// set's hosts; none for a set without them).
func LBHostAddresses(cfg *config.Config) Reserved {
	r := Reserved{}
	if cfg == nil || cfg.LoadBalancer == nil {
		return r
	}
	hosts := attr(cfg.LoadBalancer.Settings, "hosts")
	if hosts == cty.NilVal || !(hosts.Type().IsObjectType() || hosts.Type().IsMapType()) {
		return r
	}
	for it := hosts.ElementIterator(); it.Next(); {
		k, h := it.Element()
		if !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
			continue
		}
		for _, field := range []string{"address", "address6"} {
			v := attr(h, field)
			if v == cty.NilVal || v.Type() != cty.String {
				continue
			}
			if ip, err := netip.ParseAddr(v.AsString()); err == nil {
				r[ip.Unmap()] = fmt.Sprintf("the address %s of LB host %s", ip, k.AsString())
			}
		}
	}
	return r
}

// attr is v's attribute (or map element) name, cty.NilVal when v has
// none or it is null or unknown.
func attr(v cty.Value, name string) cty.Value {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal
	}
	t := v.Type()
	var out cty.Value
	switch {
	case t.IsObjectType() && t.HasAttribute(name):
		out = v.GetAttr(name)
	case t.IsMapType() && v.HasIndex(cty.StringVal(name)).True():
		out = v.Index(cty.StringVal(name))
	default:
		return cty.NilVal
	}
	if out.IsNull() || !out.IsKnown() {
		return cty.NilVal
	}
	return out
}

// coveredBy names the first reserved address inside p ("" for none).
func (r Reserved) coveredBy(p *config.AddressPool) string {
	var hits []netip.Addr
	for ip := range r {
		for _, rg := range p.Ranges {
			if rg.Contains(ip) {
				hits = append(hits, ip)
			}
		}
	}
	if len(hits) == 0 {
		return ""
	}
	slices.SortFunc(hits, netip.Addr.Compare)
	return r[hits[0]]
}

// SetReserved gives the book the addresses no AddressPool object may
// cover (the nodes'), checked at each SetObjectPools.
func (b *Book) SetReserved(f func() Reserved) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved = f
}
