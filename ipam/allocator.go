package ipam

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfccm/tfccm/config"
)

// Allocator holds which Service has which addresses, over the configured
// pools. It is safe for concurrent use.
type Allocator struct {
	mu    sync.Mutex
	pools []*config.AddressPool // by name
	held  map[string]*holding   // Service UID -> its addresses
	ips   map[netip.Addr]*use
}

// holding is one Service's addresses and how it uses them.
type holding struct {
	name string // namespace/name, for messages
	ips  []netip.Addr
	req  Request
}

// use is who uses one address, and how.
type use struct {
	sharing, backend string
	users            map[string]bool // Service UIDs
	ports            map[Port]string // port -> Service UID
}

// Assignment is the outcome for one Service.
type Assignment struct {
	IPs []netip.Addr
	// Pools are the pools of IPs, in order.
	Pools []string
	// Segments are the pools' segments, one per IP (nil: the IP is in no
	// pool, or its pool has no network block).
	Segments []*config.Segment
	// SharedWith are the other Services (namespace/name) on the addresses.
	SharedWith []string
	// ShareScope is the scope of the Service's sharing key (ShareScope):
	// its namespace, or "" when the key is cluster-wide.
	ShareScope string
}

// New returns an allocator over the cloud config's pools. With none it
// allocates nothing (the template does) and checks only the addresses
// Services chose: who holds them, and the sharing rules.
func New(pools []config.AddressPool) *Allocator {
	a := &Allocator{held: map[string]*holding{}, ips: map[netip.Addr]*use{}}
	for i := range pools {
		a.pools = append(a.pools, &pools[i])
	}
	sort.Slice(a.pools, func(i, j int) bool { return a.pools[i].Name < a.pools[j].Name })
	for _, p := range a.pools {
		setCapacity(p.Name, poolSize(p))
		setInUse(p.Name, 0)
	}
	return a
}

// SetPools replaces the pools the allocator chooses from (an AddressPool
// object added, edited or removed). Addresses Services hold stay theirs,
// inside a pool or not, until they are released; the next allocation
// chooses from the new pools.
func (a *Allocator) SetPools(pools []config.AddressPool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.pools
	a.pools = nil
	for i := range pools {
		a.pools = append(a.pools, &pools[i])
	}
	sort.Slice(a.pools, func(i, j int) bool { return a.pools[i].Name < a.pools[j].Name })
	for _, p := range old {
		if a.pool(p.Name) == nil {
			forgetPool(p.Name)
		}
	}
	for _, p := range a.pools {
		setCapacity(p.Name, poolSize(p))
	}
	a.count()
}

// FamilyUsage counts one family's addresses of a pool.
type FamilyUsage struct {
	Total *big.Int
	InUse int64
}

// Free is Total less InUse.
func (u FamilyUsage) Free() *big.Int { return new(big.Int).Sub(u.Total, big.NewInt(u.InUse)) }

// Usage counts pool's addresses per family (IPv4, IPv6), as the pool's
// status shows them; false for a pool the allocator does not have.
func (a *Allocator) Usage(pool string) (v4, v6 FamilyUsage, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pool(pool)
	if p == nil {
		return v4, v6, false
	}
	v4, v6 = FamilyUsage{Total: new(big.Int)}, FamilyUsage{Total: new(big.Int)}
	for _, r := range p.Ranges {
		u := &v4
		if r.First.Is6() {
			u = &v6
		}
		n := new(big.Int).Sub(new(big.Int).SetBytes(r.Last.AsSlice()), new(big.Int).SetBytes(r.First.AsSlice()))
		u.Total.Add(u.Total, n.Add(n, big.NewInt(1)))
	}
	for ip := range a.ips {
		if a.poolOf(ip) == p {
			if ip.Is4() {
				v4.InUse++
			} else {
				v6.InUse++
			}
		}
	}
	return v4, v6, true
}

// ConflictError: an address the Service needs is used by another Service
// in a way that forbids sharing it.
type ConflictError struct {
	IP     netip.Addr
	Holder string // namespace/name
	Why    string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("address %s is held by Service %s: %s", e.IP, e.Holder, e.Why)
}

// ExhaustedError: no pool that may serve the Service has a free address.
type ExhaustedError struct {
	Pools  []string
	Family corev1.IPFamily
}

func (e *ExhaustedError) Error() string {
	if len(e.Pools) == 1 {
		return fmt.Sprintf("address pool %s has no free %s address", e.Pools[0], e.Family)
	}
	return fmt.Sprintf("address pools %s have no free %s address", strings.Join(e.Pools, ", "), e.Family)
}

// RefusedError: the request can never be met as it is (an address outside
// every pool, an unknown pool, no pool for the Service).
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// ShareToken is what templates get as service.shared_ip for a sharing key:
// the same for every Service of a cluster with that key in one scope
// (ShareScope: a namespace, or "" for cluster-wide), and nothing of the key
// itself ("" for no key). An LB host lets owners with one token claim one
// address, so two namespaces' Services with the same key get different
// tokens: neither can attach to the other's address on the host, whatever
// tfccm decided. A cluster-wide key keeps the token it had before scopes.
func ShareToken(cluster, scope, key string) string {
	if key == "" {
		return ""
	}
	in := cluster + "\x00" + key
	if scope != "" {
		in = cluster + "\x00" + scope + "\x00" + key
	}
	sum := sha256.Sum256([]byte(in))
	return "s" + hex.EncodeToString(sum[:8])
}

// ShareScope is the scope of req's sharing key on ips: "" (cluster-wide)
// for a key from MetalLB's annotation (MetalLB's rule) or when every
// address is in a pool with share_across_namespaces, else the Service's
// namespace; "" without a key.
func (a *Allocator) ShareScope(req Request, ips []netip.Addr) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.shareScope(req, ips)
}

func (a *Allocator) shareScope(req Request, ips []netip.Addr) string {
	if req.Sharing == "" || req.MetalLBSharing {
		return ""
	}
	if len(ips) > 0 && !slices.ContainsFunc(ips, func(ip netip.Addr) bool { return !a.acrossNamespaces(ip) }) {
		return ""
	}
	return req.Namespace
}

// acrossNamespaces: ip's pool lets Services of different namespaces share
// it by key (the admin's share_across_namespaces).
func (a *Allocator) acrossNamespaces(ip netip.Addr) bool {
	p := a.poolOf(ip)
	return p != nil && p.ShareAcrossNamespaces
}

// Assign gives the Service (uid, namespace/name) addresses for req,
// keeping the ones it has when they still fit, and records them. On error
// nothing changes. nsLabels are the labels of the Service's namespace.
func (a *Allocator) Assign(uid, name string, req Request, nsLabels labels.Set) (Assignment, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ips, err := a.choose(uid, req, nsLabels)
	if err != nil {
		return Assignment{}, err
	}
	a.record(uid, &holding{name: name, ips: ips, req: req})
	return a.assignment(uid), nil
}

// Restore records addresses a Service already has (its status after a
// restart) if they are in a pool and fit the rules; it reports why not.
func (a *Allocator) Restore(uid, name string, req Request, ips []netip.Addr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range ips {
		if a.poolOf(ip) == nil && len(a.pools) > 0 {
			return &RefusedError{Msg: fmt.Sprintf("address %s is outside every address pool", ip)}
		}
		if err := a.fits(uid, ip, req); err != nil {
			return err
		}
	}
	a.record(uid, &holding{name: name, ips: slices.Clone(ips), req: req})
	return nil
}

// Release frees the Service's addresses (an address stays used while
// another Service shares it).
func (a *Allocator) Release(uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drop(uid)
}

// Holder names the Service holding ip, "" if none.
func (a *Allocator) Holder(ip netip.Addr) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.ips[ip]; u != nil {
		return a.holderName(u, "")
	}
	return ""
}

func (a *Allocator) choose(uid string, req Request, nsLabels labels.Set) ([]netip.Addr, error) {
	if req.Pool != "" && a.pool(req.Pool) == nil {
		return nil, &RefusedError{Msg: fmt.Sprintf("address pool %s does not exist (pools: %s)", req.Pool, strings.Join(a.poolNames(), ", "))}
	}
	if p := a.pool(req.Pool); p != nil && !selects(p, req, nsLabels) {
		return nil, &RefusedError{Msg: notSelected(p, req)}
	}
	if len(req.IPs) > 0 {
		for _, ip := range req.IPs {
			p := a.poolOf(ip)
			switch {
			case len(a.pools) > 0 && !slices.Contains(req.Families, familyOf(ip)):
				// Without pools the template judges (its message names its limits).
				return nil, &RefusedError{Msg: fmt.Sprintf("requested address %s is %s, but the Service's ipFamilies are %v", ip, familyOf(ip), req.Families)}
			case p == nil && len(a.pools) == 0:
				// No pools: the template allocates, and only chosen
				// addresses are checked (holders and sharing).
			case p == nil:
				return nil, &RefusedError{Msg: fmt.Sprintf("requested address %s is outside every address pool (%s)", ip, a.describePools())}
			case req.Pool != "" && (p == nil || p.Name != req.Pool):
				return nil, &RefusedError{Msg: fmt.Sprintf("requested address %s is not in address pool %s (annotation)", ip, req.Pool)}
			case p != nil && !selects(p, req, nsLabels):
				return nil, &RefusedError{Msg: fmt.Sprintf("requested address %s: %s", ip, notSelected(p, req))}
			}
			if err := a.fits(uid, ip, req); err != nil {
				return nil, err
			}
		}
		return slices.Clone(req.IPs), nil
	}
	if h := a.held[uid]; h != nil && a.stillFits(uid, h, req, nsLabels) {
		return slices.Clone(h.ips), nil
	}
	if cur := (&holding{ips: req.Current}); len(req.Current) > 0 && a.stillFits(uid, cur, req, nsLabels) {
		return slices.Clone(req.Current), nil
	}
	pools := a.candidates(req, nsLabels)
	if len(pools) == 0 {
		return nil, &RefusedError{Msg: "no address pool serves this Service: every pool either does not auto-assign or selects other namespaces or labels; name one with annotation tfccm.io/address-pool"}
	}
	got := make([]netip.Addr, len(req.Families))
	var have []netip.Addr
	for i, fam := range req.Families {
		got[i] = a.pick(uid, pools, fam, req)
		if got[i].IsValid() {
			have = append(have, got[i])
		}
	}
	switch {
	case len(have) == len(req.Families):
		return have, nil
	case !req.Require && len(have) > 0 && (got[0].IsValid() || req.Prefer):
		// The primary family (or, with PreferDualStack, either).
		return have, nil
	}
	// Some family got no address: the first such one is the reason.
	missing := slices.IndexFunc(got, func(ip netip.Addr) bool { return !ip.IsValid() })
	return nil, a.noAddress(pools, req.Families[missing], req)
}

// pick is the first address of family fam that a pool of pools (in their
// order) has free for the Service: a dual-stack Service takes each family
// from the first pool that has it, one pool or one per family alike.
func (a *Allocator) pick(uid string, pools []*config.AddressPool, fam corev1.IPFamily, req Request) netip.Addr {
	for _, p := range pools {
		if ip, ok := a.freeIn(uid, p, fam, req); ok {
			return ip
		}
	}
	return netip.Addr{}
}

// noAddress says why no pool of pools gave the Service an address of
// family fam: none has that family (refused), or all of those are full.
func (a *Allocator) noAddress(pools []*config.AddressPool, fam corev1.IPFamily, req Request) error {
	var names, all []string
	for _, p := range pools {
		all = append(all, p.Name)
		if slices.ContainsFunc(p.Ranges, func(r config.AddrRange) bool { return familyOf(r.First) == fam }) {
			names = append(names, p.Name)
		}
	}
	if len(names) > 0 {
		exhausted.WithLabelValues(names[0]).Inc()
		return &ExhaustedError{Pools: names, Family: fam}
	}
	msg := fmt.Sprintf("no address pool this Service may use has %s addresses (pools: %s)", fam, strings.Join(all, ", "))
	if req.Require {
		msg += fmt.Sprintf("; the Service requires dual-stack (ipFamilyPolicy RequireDualStack): add an %s address_pool, or use PreferDualStack", fam)
	}
	return &RefusedError{Msg: msg}
}

// maxProbe bounds the search of one range (a huge IPv6 range is never
// walked to its end).
const maxProbe = 1 << 16

// freeIn finds an address of family fam in p the Service may use: first
// one its sharing group already uses, then the first unused one.
func (a *Allocator) freeIn(uid string, p *config.AddressPool, fam corev1.IPFamily, req Request) (netip.Addr, bool) {
	if req.Sharing != "" {
		var shared []netip.Addr
		for ip, u := range a.ips {
			if u.sharing == req.Sharing && familyOf(ip) == fam && a.poolOf(ip) == p && a.fits(uid, ip, req) == nil {
				shared = append(shared, ip)
			}
		}
		if len(shared) > 0 {
			slices.SortFunc(shared, netip.Addr.Compare)
			return shared[0], true
		}
	}
	for _, r := range p.Ranges {
		if familyOf(r.First) != fam {
			continue
		}
		ip := r.First
		for n := 0; n < maxProbe && ip.IsValid() && r.Contains(ip); n, ip = n+1, ip.Next() {
			if p.AvoidBuggyIPs && buggy(ip) {
				continue
			}
			if u := a.ips[ip]; u == nil || (u.users[uid] && len(u.users) == 1) {
				return ip, true
			}
		}
	}
	return netip.Addr{}, false
}

// fits checks MetalLB's sharing rules for the Service using ip.
func (a *Allocator) fits(uid string, ip netip.Addr, req Request) error {
	u := a.ips[ip]
	if u == nil {
		return nil
	}
	others := len(u.users)
	if u.users[uid] {
		others--
	}
	if others == 0 {
		return nil
	}
	holder := a.holderName(u, uid)
	switch {
	case u.sharing == "":
		return &ConflictError{IP: ip, Holder: holder, Why: "it does not allow sharing (no tfccm.io/allow-shared-ip)"}
	case req.Sharing == "":
		return &ConflictError{IP: ip, Holder: holder, Why: "this Service does not allow sharing (set tfccm.io/allow-shared-ip to the same key)"}
	case u.sharing != req.Sharing:
		return &ConflictError{IP: ip, Holder: holder, Why: "its sharing key differs from this Service's"}
	case u.backend != req.Backend:
		return &ConflictError{IP: ip, Holder: holder, Why: "Services sharing an address with externalTrafficPolicy: Local must all have it and the same selector"}
	}
	// The users by name, so the one an error names is the same every time.
	var users []*holding
	for o := range u.users {
		if h := a.held[o]; o != uid && h != nil {
			users = append(users, h)
		}
	}
	slices.SortFunc(users, func(x, y *holding) int { return strings.Compare(x.name, y.name) })
	for _, h := range users {
		switch {
		case h.req.MetalLBSharing != req.MetalLBSharing:
			return &ConflictError{IP: ip, Holder: h.name, Why: "one of the two sets its sharing key with MetalLB's allow-shared-ip annotation, the other with tfccm.io/allow-shared-ip: use the same annotation"}
		case h.req.Namespace != req.Namespace && !req.MetalLBSharing && !a.acrossNamespaces(ip):
			return &ConflictError{IP: ip, Holder: h.name, Why: fmt.Sprintf("it is in namespace %s, and a tfccm.io/allow-shared-ip key shares an address only within one namespace (unless the address pool has share_across_namespaces)", h.req.Namespace)}
		}
	}
	for _, p := range req.Ports {
		if other, ok := u.ports[p]; ok && other != uid {
			return &ConflictError{IP: ip, Holder: a.held[other].name, Why: fmt.Sprintf("port %s is used by both", p)}
		}
	}
	return nil
}

// stillFits: a held address is kept unless the Service's pool choice or
// families changed, or its new ports or key no longer fit.
func (a *Allocator) stillFits(uid string, h *holding, req Request, nsLabels labels.Set) bool {
	if len(h.ips) == 0 || len(h.ips) > len(req.Families) {
		return false
	}
	for i, ip := range h.ips {
		p := a.poolOf(ip)
		if p == nil || !slices.Contains(req.Families, familyOf(ip)) || i > 0 && familyOf(ip) == familyOf(h.ips[0]) {
			return false
		}
		if req.Pool != "" && (p.Name != req.Pool || !selects(p, req, nsLabels)) || req.Pool == "" && !slices.Contains(a.candidates(req, nsLabels), p) {
			return false
		}
		if a.fits(uid, ip, req) != nil {
			return false
		}
	}
	return !req.Require || len(h.ips) == len(req.Families)
}

// candidates are the pools a Service may get addresses from: the one it
// named, else the auto-assigning pools whose selectors match it by
// priority, then the auto-assigning pools without selectors.
func (a *Allocator) candidates(req Request, nsLabels labels.Set) []*config.AddressPool {
	if req.Pool != "" {
		if p := a.pool(req.Pool); p != nil {
			return []*config.AddressPool{p}
		}
		return nil
	}
	var pinned, rest []*config.AddressPool
	for _, p := range a.pools {
		switch {
		case !*p.AutoAssign:
		case !p.HasSelectors():
			rest = append(rest, p)
		case selects(p, req, nsLabels):
			pinned = append(pinned, p)
		}
	}
	sort.SliceStable(pinned, func(i, j int) bool {
		pi, pj := pinned[i].Priority, pinned[j].Priority
		return pi != 0 && (pj == 0 || pi < pj)
	})
	return append(pinned, rest...)
}

// notSelected says why p may not serve a Service it does not select.
func notSelected(p *config.AddressPool, req Request) string {
	return fmt.Sprintf("address pool %s serves only the Services its namespaces, namespace_selectors and service_selectors select, and not this one (namespace %s): "+
		"an address pool the admin restricted is never given to other namespaces, named or not", p.Name, req.Namespace)
}

// selects is MetalLB's serviceAllocation match: the namespace (by name or
// by selector) when either is set, and the Service's labels when service
// selectors are set.
func selects(p *config.AddressPool, req Request, nsLabels labels.Set) bool {
	if len(p.Namespaces) > 0 || len(p.NamespaceSels) > 0 {
		ok := slices.Contains(p.Namespaces, req.Namespace)
		for _, s := range p.NamespaceSels {
			ok = ok || s.Matches(nsLabels)
		}
		if !ok {
			return false
		}
	}
	if len(p.ServiceSels) > 0 {
		for _, s := range p.ServiceSels {
			if s.Matches(req.Labels) {
				return true
			}
		}
		return false
	}
	return true
}

func (a *Allocator) record(uid string, h *holding) {
	a.drop(uid)
	a.held[uid] = h
	for _, ip := range h.ips {
		u := a.ips[ip]
		if u == nil {
			u = &use{users: map[string]bool{}, ports: map[Port]string{}}
			a.ips[ip] = u
		}
		u.sharing, u.backend = h.req.Sharing, h.req.Backend
		u.users[uid] = true
		for _, p := range h.req.Ports {
			u.ports[p] = uid
		}
	}
	a.count()
}

func (a *Allocator) drop(uid string) {
	h := a.held[uid]
	if h == nil {
		return
	}
	delete(a.held, uid)
	for _, ip := range h.ips {
		u := a.ips[ip]
		if u == nil {
			continue
		}
		delete(u.users, uid)
		for p, o := range u.ports {
			if o == uid {
				delete(u.ports, p)
			}
		}
		if len(u.users) == 0 {
			delete(a.ips, ip)
		}
	}
	a.count()
}

// count publishes how many addresses of each pool are used.
func (a *Allocator) count() {
	n := map[string]int{}
	for ip := range a.ips {
		if p := a.poolOf(ip); p != nil {
			n[p.Name]++
		}
	}
	for _, p := range a.pools {
		setInUse(p.Name, n[p.Name])
	}
}

// Assignment is what the Service holds (it must hold something).
func (a *Allocator) Assignment(uid string) Assignment {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.assignment(uid)
}

func (a *Allocator) assignment(uid string) Assignment {
	h := a.held[uid]
	out := Assignment{IPs: slices.Clone(h.ips), ShareScope: a.shareScope(h.req, h.ips)}
	seen := map[string]bool{}
	for _, ip := range h.ips {
		var seg *config.Segment
		if p := a.poolOf(ip); p != nil {
			out.Pools = append(out.Pools, p.Name)
			if p.Network != nil {
				seg = &config.Segment{Pool: p.Name, Network: p.Network}
			}
		}
		out.Segments = append(out.Segments, seg)
		for o := range a.ips[ip].users {
			if o != uid && !seen[o] {
				seen[o] = true
				out.SharedWith = append(out.SharedWith, a.held[o].name)
			}
		}
	}
	sort.Strings(out.SharedWith)
	return out
}

// holderName names a user of u other than uid (the first by name).
func (a *Allocator) holderName(u *use, uid string) string {
	var names []string
	for o := range u.users {
		if o != uid {
			names = append(names, a.held[o].name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func (a *Allocator) pool(name string) *config.AddressPool {
	for _, p := range a.pools {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (a *Allocator) poolOf(ip netip.Addr) *config.AddressPool {
	for _, p := range a.pools {
		if p.AvoidBuggyIPs && buggy(ip) {
			continue
		}
		for _, r := range p.Ranges {
			if r.Contains(ip) {
				return p
			}
		}
	}
	return nil
}

func (a *Allocator) poolNames() []string {
	out := make([]string, len(a.pools))
	for i, p := range a.pools {
		out[i] = p.Name
	}
	return out
}

func (a *Allocator) describePools() string {
	var parts []string
	for _, p := range a.pools {
		parts = append(parts, p.Name+": "+strings.Join(p.Addresses, ", "))
	}
	return strings.Join(parts, "; ")
}

// buggy: IPv4 addresses ending in .0 or .255 confuse some CPE firmware.
func buggy(ip netip.Addr) bool {
	if !ip.Is4() {
		return false
	}
	b := ip.As4()
	return b[3] == 0 || b[3] == 255
}

// poolSize is how many addresses p holds (capped for huge IPv6 ranges).
func poolSize(p *config.AddressPool) float64 {
	var n float64
	for _, r := range p.Ranges {
		f, l := r.First.AsSlice(), r.Last.AsSlice()
		var diff float64
		for i := range f {
			diff = diff*256 + float64(int(l[i])-int(f[i]))
		}
		n += diff + 1
	}
	return n
}
