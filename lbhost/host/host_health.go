// Everything the health round reads of one host at once: every HAProxy
// frontend's servers, every layer-4 load balancer's forwarded backends,
// every VRRP instance's VIP holding and the BGP sessions.

package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/l4"
)

// The reads ReadHealth can do; a set's hosts health module names those its
// hosts serve.
const (
	ReadHAProxy = "haproxy"
	ReadL4      = "l4"
	ReadVRRP    = "vrrp"
	ReadBGP     = "bgp"
)

// HealthReads lists every read ReadHealth knows.
var HealthReads = []string{ReadHAProxy, ReadL4, ReadVRRP, ReadBGP}

// Health is one host's view of every load balancer it serves.
type Health struct {
	// Frontends: per HAProxy load balancer name (an lbhost_frontend's),
	// its servers as FrontendHealth returns them.
	Frontends map[string][]BackendHealth
	// L4Frontends: per layer-4 load balancer name, its backends as
	// L4FrontendHealth returns them (one the router has not loaded is
	// left out: its rules say nothing of its backends).
	L4Frontends map[string][]BackendHealth
	// VIPs: per VRRP instance owner (VRRPOwner: the VIP's owner, or
	// "share.<token>" for a shared one), whether the host holds it.
	VIPs map[string]VIPHolding
	// BGPSessions as BGPSessions returns them.
	BGPSessions []BGPSession
}

// ReadHealth reads what reads name (HealthReads) with one command each,
// whatever the number of load balancers: one `show servers state`, one
// listing of the layer-4 configs and the router's table, one listing of
// the VRRP fragments and one `ip -j addr`, one `vtysh`. It takes no lock
// and changes nothing.
func (h *Host) ReadHealth(ctx context.Context, reads []string) (Health, error) {
	var out Health
	for _, r := range reads {
		if !slices.Contains(HealthReads, r) {
			return Health{}, &FieldError{Field: "reads", Msg: fmt.Sprintf("%q: want one of %s", r, strings.Join(HealthReads, ", "))}
		}
	}
	if len(reads) > 0 && !(len(reads) == 1 && reads[0] == ReadBGP) {
		if err := h.needDir(); err != nil {
			return Health{}, err
		}
	}
	var err error
	if slices.Contains(reads, ReadHAProxy) {
		if out.Frontends, err = h.allFrontendHealth(ctx); err != nil {
			return Health{}, err
		}
	}
	if slices.Contains(reads, ReadL4) {
		if out.L4Frontends, err = h.allL4Health(ctx); err != nil {
			return Health{}, err
		}
	}
	if slices.Contains(reads, ReadVRRP) {
		if out.VIPs, err = h.allVIPHoldings(ctx); err != nil {
			return Health{}, err
		}
	}
	if slices.Contains(reads, ReadBGP) {
		if out.BGPSessions, err = h.BGPSessions(ctx); err != nil {
			return Health{}, err
		}
	}
	return out, nil
}

// allFrontendHealth is FrontendHealth of every load balancer HAProxy runs.
func (h *Host) allFrontendHealth(ctx context.Context) (map[string][]BackendHealth, error) {
	dump, err := h.masterCLI(ctx, "@1 show servers state")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(dump, "1\n") {
		return nil, fmt.Errorf("%s: HAProxy's show servers state answered %q", h.T, firstLine(dump))
	}
	out := map[string][]BackendHealth{}
	for name, servers := range haproxy.ParseAllServerHealth([]byte(dump)) {
		if !haproxy.ValidName(name) {
			continue
		}
		for _, s := range servers {
			out[name] = append(out[name], BackendHealth{Name: s.Name, Address: s.Address, Healthy: s.Healthy})
		}
	}
	return out, nil
}

// allL4Health is L4FrontendHealth of every layer-4 load balancer whose
// config the router has loaded.
func (h *Host) allL4Health(ctx context.Context) (map[string][]BackendHealth, error) {
	files, err := h.T.ReadFiles(ctx, h.p("l4"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	out := map[string][]BackendHealth{}
	if len(files) == 0 {
		return out, nil
	}
	loaded, err := h.loadedL4(ctx)
	if err != nil {
		return nil, err
	}
	for file, data := range files {
		name, ok := strings.CutSuffix(file, ".json")
		if !ok || !l4.ValidName(name) {
			continue
		}
		c, err := l4.Parse(data)
		if err != nil || c.Name != name || l4.ConfigOfSignature(loaded.Signatures[name]) != l4.ConfigHash(c) {
			continue // drift: the per-load-balancer read reports it
		}
		hs := []BackendHealth{}
		for _, b := range c.Backends {
			hs = append(hs, BackendHealth{Name: b.Name, Address: b.Address, Healthy: slices.Contains(loaded.Targets[name], b.Address)})
		}
		out[name] = hs
	}
	return out, nil
}

// allVIPHoldings is HoldsVIP of every VRRP instance on the host, by its
// owner, from one read of the fragments and one `ip -j addr`.
func (h *Host) allVIPHoldings(ctx context.Context) (map[string]VIPHolding, error) {
	files, err := h.T.ReadFiles(ctx, h.p("keepalived"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	instances := map[string]keepalived.Instance{}
	for file, data := range files {
		owner, ok := strings.CutSuffix(file, ".conf")
		if !ok || !ValidOwner(owner) {
			continue
		}
		in, err := keepalived.Parse(data)
		if err != nil || in.Owner != owner || !ValidInterface(in.AddressInterface) {
			continue // drift: the per-load-balancer read reports it
		}
		instances[owner] = in
	}
	out := map[string]VIPHolding{}
	if len(instances) == 0 {
		return out, nil
	}
	addrs, err := h.T.Run(ctx, nil, "ip", "-j", "addr", "show")
	if err != nil {
		return nil, fmt.Errorf("%s: read addresses: %w", h.T, err)
	}
	on, err := parseAddrs(addrs)
	if err != nil {
		return nil, fmt.Errorf("%s: parse ip -j addr: %w", h.T, err)
	}
	for owner, in := range instances {
		out[owner] = VIPHolding{Address: in.Address, Held: on[in.AddressInterface+" "+in.Address]}
	}
	return out, nil
}

// parseAddrs is the set of "<interface> <address>" of `ip -j addr show`.
func parseAddrs(out []byte) (map[string]bool, error) {
	var links []struct {
		IfName   string `json:"ifname"`
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, err
	}
	on := map[string]bool{}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			on[l.IfName+" "+a.Local] = true
		}
	}
	return on, nil
}
