// BGP on test hosts: FRR and the announcer on every LB host, and a
// top-of-rack router namespace running FRR with ECMP and BFD, with
// clients behind it.

package hosttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/localcloud"
)

// BGP addressing of StartBGP: the announced pools lie outside every
// network (and outside the local clouds' 10.251.0.0/16 and
// 10.252.0.0/16), so only the routes the hosts announce reach them; the
// clients (RFC 2544's benchmarking range) are behind the router. Both
// exist only inside the test's namespaces.
const (
	BGPPool   = "198.51.100.0/24"
	BGPPool6  = "fd00:253::/112"
	HostASN   = 64513
	ToRASN    = 64512
	clientNet = "198.18.0"
)

// DefaultBFDInterval and BFDMultiplier are the BFD profile "fast" the
// router and the hosts run unless BGPOptions.BFDInterval says otherwise.
const (
	DefaultBFDInterval = 100 * time.Millisecond
	BFDMultiplier      = 3
)

// BGPOptions configure StartBGP.
type BGPOptions struct {
	// Router is the lbhost-router binary (make build: bin/lbhost-router).
	Router string
	// Clients is how many client addresses the clients' namespace has
	// (default 32).
	Clients int
	// Password, when set, is the sessions' TCP MD5 password: the
	// router's configuration has it, and PasswordFile (for the hosts'
	// password_file) holds it.
	Password string
	// RouterSide: the router's FRR starts with its admin's configuration
	// alone (AdminConfig: its own `router bgp`, no LB host) and an sshd
	// on Address, so the bgp module's lbhost_bgp_router adds the hosts
	// (RouterSideSettings).
	RouterSide bool
	// BFDInterval is the transmit and receive interval of the BFD
	// profile "fast" on both sides (detect multiplier 3; default 100 ms).
	BFDInterval time.Duration
	// RoutedPorts cables every host to a port of the router's own (a
	// veth pair with a /31 and a /64: PortNet) and peers over it, as a
	// host on a top-of-rack router's routed port: the router sees the
	// port lose its carrier when the host's end goes down (SetPort). By
	// default the router and the hosts share the hosts' network (a
	// switch between them), where only BFD sees a host go away.
	RoutedPorts bool
}

// PortNet and PortNet6 hold the routed ports' networks: host i's port is
// PortNet.i.0/31 (the router .0, the host .1) and PortNet6:i::/64 (the
// router ::1, the host ::2).
const (
	PortNet  = "198.19"
	PortNet6 = "fd00:254"
)

// port is a host's routed port (BGPOptions.RoutedPorts): the router's
// link and both ends' addresses.
type port struct {
	link                         string // the router's end; the host's is portLink
	router, router6, host, host6 string
}

// portLink is the host's end of its routed port.
const portLink = "port0"

// ToR is the top-of-rack router: FRR in its own namespace on the hosts'
// network, peering with every host, installing their routes with ECMP
// (hashing flows by addresses and ports) and BFD; and the clients'
// namespace behind it.
type ToR struct {
	Netns, ClientNetns string
	// Address and Address6 are its addresses on the hosts' network: the
	// hosts' peer.
	Address, Address6 string
	// Clients are the client addresses (IPv4 and IPv6, as many of each).
	Clients, Clients6 []string
	// PasswordFile holds BGPOptions.Password ("" without one);
	// RouterPasswordFile is the router's own copy (RouterSide).
	PasswordFile, RouterPasswordFile string
	// HostKey is the router's sshd's host key (RouterSide).
	HostKey string

	// bfd is the BFD profile's interval (BGPOptions.BFDInterval).
	bfd time.Duration
	// ports are the hosts' routed ports by host name (none without
	// BGPOptions.RoutedPorts).
	ports map[string]port

	hs      *Hosts
	dir     string
	mu      sync.Mutex
	daemons []*exec.Cmd
}

// frrDir is where a namespace's FRR keeps its configuration and pid
// files: group frr may write (FRR's daemons run as user frr), nobody else.
func frrDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o770); err != nil {
		return "", err
	}
	g, err := user.LookupGroup("frr")
	if err != nil {
		return "", fmt.Errorf("group frr: %w (Debian's frr: make tools installs it)", err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	if err := os.Chown(dir, 0, gid); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o770)
}

// startFRR runs zebra, bgpd and bfdd in netns with pathspace netns (its
// directory dir, writable by group frr), then loads the integrated
// configuration file conf through vtysh, as Debian's frrinit does (vtysh
// -b): each daemon reading conf itself (-f) stops at the first "exit" of
// a block it does not know (bfdd at "router bgp"'s), so bfdd never read
// the BFD profiles after it and ran its sessions at FRR's 300 ms default.
func startFRR(netns, dir, conf string) ([]*exec.Cmd, error) {
	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, nil, 0o640); err != nil {
		return nil, err
	}
	if err := os.Chown(empty, 0, mustGid("frr")); err != nil {
		return nil, err
	}
	rundir := filepath.Join("/var/run/frr", netns)
	var cmds []*exec.Cmd
	for _, d := range []string{"zebra", "bgpd", "bfdd"} {
		argv := []string{"/usr/lib/frr/" + d, "-N", netns, "-f", empty, "-i", filepath.Join(dir, d+".pid"), "--log", "file:" + filepath.Join(dir, d+".log")}
		if d == "bfdd" {
			// Real-time priority: on this shared, loaded machine a bfdd
			// starved of CPU for 300 ms took every session down at once
			// (docs/bgp.md); a router runs BFD in hardware or first.
			argv = append([]string{"chrt", "--rr", "10"}, append(argv, "--bfdctl", filepath.Join(rundir, "bfdd.sock"))...)
		}
		// A restarted daemon's old socket would pass the wait below.
		_ = os.Remove(filepath.Join(rundir, d+".vty"))
		cmd, err := start(netns, filepath.Join(dir, d+".out"), argv...)
		if err != nil {
			return cmds, err
		}
		cmds = append(cmds, cmd)
		if d == "zebra" {
			// bgpd and bfdd connect to zebra's socket.
			if err := waitFile(context.Background(), filepath.Join(rundir, "zserv.api")); err != nil {
				return cmds, fmt.Errorf("zebra in %s: %w", netns, err)
			}
		}
	}
	for _, d := range []string{"zebra", "bgpd", "bfdd"} {
		if err := waitFile(context.Background(), filepath.Join(rundir, d+".vty")); err != nil {
			return cmds, fmt.Errorf("%s in %s: %w", d, netns, err)
		}
	}
	if err := run("vtysh", "-N", netns, "-f", conf); err != nil {
		return cmds, fmt.Errorf("loading %s: %w", conf, err)
	}
	return cmds, nil
}

// FRRConfig is the FRR configuration file of the host (the bgp module's
// frr_config), FRRPathspace its FRR's -N.
func (h *Host) FRRConfig() string    { return filepath.Join(h.frrDir(), "frr.conf") }
func (h *Host) FRRPathspace() string { return h.Netns }
func (h *Host) frrDir() string       { return filepath.Join(os.TempDir(), "lbhost-frr-"+h.Netns) }

// StartBGP starts the router and FRR (no BGP yet: lbhost_bgp_speaker
// writes it) and the announcer (lbhost-router -announce
// <config_dir>/bgp) on every host. Stop (or the ToR's) stops them.
func (hs *Hosts) StartBGP(opts BGPOptions) (_ *ToR, err error) {
	if opts.Clients == 0 {
		opts.Clients = 32
	}
	if opts.BFDInterval == 0 {
		opts.BFDInterval = DefaultBFDInterval
	}
	if opts.BFDInterval < 10*time.Millisecond || opts.BFDInterval%time.Millisecond != 0 {
		return nil, fmt.Errorf("lbhosts: BFD interval %s: want whole milliseconds, at least 10 ms (FRR's minimum)", opts.BFDInterval)
	}
	if _, err := os.Stat(opts.Router); err != nil {
		return nil, fmt.Errorf("lbhosts: lbhost-router: %w (make build builds bin/lbhost-router)", err)
	}
	pool := netip.MustParsePrefix(hs.cloud.VIPPool).Addr().As4()
	t := &ToR{hs: hs, bfd: opts.BFDInterval, Netns: hs.cloud.Prefix + "-tor", ClientNetns: hs.cloud.Prefix + "-cl",
		Address: netip.AddrFrom4([4]byte{pool[0], pool[1], pool[2], 126}).String(), Address6: "fd00:250::fe",
		dir: filepath.Join(os.TempDir(), "lbhost-frr-"+hs.cloud.Prefix+"-tor")}
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	if opts.RoutedPorts {
		// Before the router's configuration, which peers with the ports.
		if len(hs.Hosts) > 250 {
			return nil, fmt.Errorf("lbhosts: %d hosts: routed ports number up to 250", len(hs.Hosts))
		}
		t.ports = map[string]port{}
		for i, h := range hs.Hosts {
			t.ports[h.Name] = port{link: fmt.Sprintf("%s-p%d", hs.cloud.Prefix, i),
				router: fmt.Sprintf("%s.%d.0", PortNet, i), host: fmt.Sprintf("%s.%d.1", PortNet, i),
				// Canonical, as FRR names its neighbours.
				router6: netip.MustParseAddr(fmt.Sprintf("%s:%x::1", PortNet6, i)).String(),
				host6:   netip.MustParseAddr(fmt.Sprintf("%s:%x::2", PortNet6, i)).String()}
		}
	}
	if err := t.up(opts); err != nil {
		return nil, fmt.Errorf("lbhosts: router: %w", err)
	}
	for _, h := range hs.Hosts {
		if p, ok := t.ports[h.Name]; ok {
			if err := t.upPort(h, p); err != nil {
				return nil, fmt.Errorf("lbhosts: %s's routed port: %w", h.Name, err)
			}
		}
	}
	for _, h := range hs.Hosts {
		if err := t.upHost(h, opts.Router); err != nil {
			return nil, fmt.Errorf("lbhosts: %s: %w", h.Name, err)
		}
	}
	return t, nil
}

func (t *ToR) up(opts BGPOptions) error {
	bridge := t.hs.cloud.Prefix + "-br"
	cloud := t.hs.cloud.CloudNetns
	link, clink := t.hs.cloud.Prefix+"-tr", t.hs.cloud.Prefix+"-tc"
	steps := [][]string{
		{"netns", "add", t.Netns},
		{"netns", "add", t.ClientNetns},
		{"-n", t.Netns, "link", "set", "lo", "up"},
		{"-n", t.ClientNetns, "link", "set", "lo", "up"},
		{"-n", cloud, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", t.Netns},
		{"-n", cloud, "link", "set", link, "master", bridge, "up"},
		{"-n", t.Netns, "addr", "add", t.Address + "/24", "dev", "eth0"},
		{"-n", t.Netns, "addr", "add", t.Address6 + "/64", "dev", "eth0", "nodad"},
		{"-n", t.Netns, "link", "set", "eth0", "up"},
		{"-n", t.Netns, "link", "add", clink, "type", "veth", "peer", "name", "eth0", "netns", t.ClientNetns},
		{"-n", t.Netns, "addr", "add", clientNet + ".1/24", "dev", clink},
		{"-n", t.Netns, "addr", "add", "fd00:251::1/64", "dev", clink, "nodad"},
		{"-n", t.Netns, "link", "set", clink, "up"},
		{"-n", t.ClientNetns, "link", "set", "eth0", "up"},
	}
	for i := 0; i < opts.Clients; i++ {
		c, c6 := fmt.Sprintf("%s.%d", clientNet, 10+i), fmt.Sprintf("fd00:251::%x", 0x10+i)
		t.Clients, t.Clients6 = append(t.Clients, c), append(t.Clients6, c6)
		steps = append(steps, []string{"-n", t.ClientNetns, "addr", "add", c + "/24", "dev", "eth0"},
			[]string{"-n", t.ClientNetns, "addr", "add", c6 + "/64", "dev", "eth0", "nodad"})
	}
	steps = append(steps, []string{"-n", t.ClientNetns, "route", "add", "default", "via", clientNet + ".1"},
		[]string{"-n", t.ClientNetns, "-6", "route", "add", "default", "via", "fd00:251::1"})
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	for _, ns := range []string{t.Netns, t.ClientNetns} {
		if err := run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0"); err != nil {
			return err
		}
	}
	// A router: forwarding, and ECMP hashing flows by addresses and ports
	// (policy 1), so many clients' flows spread over the hosts.
	if err := run("ip", "netns", "exec", t.Netns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		"net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1"); err != nil {
		return err
	}
	dir, err := frrDir(t.dir)
	if err != nil {
		return err
	}
	if opts.Password != "" {
		t.PasswordFile = filepath.Join(t.hs.dir, "bgp-password")
		if err := os.WriteFile(t.PasswordFile, []byte(opts.Password+"\n"), 0o600); err != nil {
			return err
		}
	}
	conf := t.FRRConfig()
	text := t.config(opts.Password)
	if opts.RouterSide {
		text = AdminConfig
		if err := t.upRouterSide(opts); err != nil {
			return err
		}
	}
	if err := os.WriteFile(conf, []byte(text), 0o640); err != nil {
		return err
	}
	if err := os.Chown(conf, 0, mustGid("frr")); err != nil {
		return err
	}
	cmds, err := startFRR(t.Netns, dir, conf)
	t.mu.Lock()
	t.daemons = append(t.daemons, cmds...)
	t.mu.Unlock()
	return err
}

// AdminConfig is the router's own FRR configuration in a RouterSide
// test: its admin's BGP instance with an upstream neighbour of its own,
// and marker lines (a comment, a prefix list) that must survive tfccm.
var AdminConfig = fmt.Sprintf(`frr defaults datacenter
! admin-marker: the router's admin wrote this file; tfccm adds its own section only.
ip prefix-list admin-marker seq 5 permit 203.0.113.0/24
!
router bgp %d
 bgp router-id 10.255.0.1
 neighbor 192.0.2.1 remote-as 65001
 neighbor 192.0.2.1 description upstream
 neighbor 192.0.2.1 shutdown
exit
!
`, ToRASN)

// FRRConfig is the router's FRR configuration file, FRRPathspace its -N.
func (t *ToR) FRRConfig() string    { return filepath.Join(t.dir, "frr.conf") }
func (t *ToR) FRRPathspace() string { return t.Netns }

// upRouterSide gives the router what lbhost_bgp_router needs: an sshd on
// Address authorizing the hosts' client key, vtysh.conf for frr-reload.py
// and its own copy of the password.
func (t *ToR) upRouterSide(opts BGPOptions) error {
	if err := os.MkdirAll(filepath.Join("/etc/frr", t.Netns), 0o755); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join("/etc/frr", t.Netns, "vtysh.conf"), nil, 0o644)
	if opts.Password != "" {
		t.RouterPasswordFile = filepath.Join(t.dir, "bgp-password")
		if err := os.WriteFile(t.RouterPasswordFile, []byte(opts.Password+"\n"), 0o600); err != nil {
			return err
		}
	}
	// Back to OpenTofu's SSH connections (from outside the hosts' network).
	if err := ip("-n", t.Netns, "route", "add", "default", "via", strings.Split(t.hs.router, "/")[0]); err != nil {
		return err
	}
	sshDir := filepath.Join(t.hs.dir, "tor-ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		return err
	}
	key, err := writeSSHD(sshDir, t.Address, t.hs.PrivateKey+".pub")
	if err != nil {
		return err
	}
	cmd, err := startSSHD(sshDir, func(argv ...string) []string {
		return append([]string{"ip", "netns", "exec", t.Netns}, argv...)
	})
	if cmd != nil {
		t.mu.Lock()
		t.daemons = append(t.daemons, cmd)
		t.mu.Unlock()
	}
	t.HostKey = key
	return err
}

// RouterSideSettings is load_balancer.settings for the bgp module with
// the router in settings.bgp.routers (no peers of the hosts' own): the
// module declares both sides.
func (t *ToR) RouterSideSettings() map[string]any {
	s := t.BGPSettings(true)
	bgp := s["bgp"].(map[string]any)
	bgp["peers"] = []any{}
	r := map[string]any{"name": "tor", "address": t.Address, "address6": t.Address6, "asn": ToRASN, "host_key": t.HostKey,
		"frr_config": t.FRRConfig(), "frr_pathspace": t.FRRPathspace(), "keepalive_time": 1, "hold_time": 3, "bfd_profile": "fast"}
	if t.PasswordFile != "" {
		r["password_file"], r["router_password_file"] = t.PasswordFile, t.RouterPasswordFile
	}
	bgp["routers"] = []any{r}
	return s
}

// RunningConfig is the router's FRR running configuration.
func (t *ToR) RunningConfig() (string, error) {
	out, err := exec.Command("vtysh", "-N", t.Netns, "-c", "show running-config").Output()
	if err != nil {
		return "", fmt.Errorf("vtysh: %w", err)
	}
	return string(out), nil
}

// Route is the router's BGP table entry for prefix (`show bgp <family>
// unicast <prefix>`: its paths with their communities).
func (t *ToR) Route(prefix string) (string, error) {
	fam := "ipv4"
	if strings.Contains(prefix, ":") {
		fam = "ipv6"
	}
	out, err := exec.Command("vtysh", "-N", t.Netns, "-c", "show bgp "+fam+" unicast "+prefix).Output()
	if err != nil {
		return "", fmt.Errorf("vtysh: %w", err)
	}
	return string(out), nil
}

// config is the router's FRR configuration: every host a peer (IPv4 and
// IPv6 sessions) with BFD, up to 8 equal paths installed (ECMP).
func (t *ToR) config(password string) string {
	var b strings.Builder
	// IPv6 routes via the hosts' global addresses (not their link-local
	// ones), so the router's paths name the hosts' addresses.
	b.WriteString("frr defaults datacenter\n!\n")
	if t.ports != nil {
		// Routes with their next hops, not kernel nexthop objects: the
		// kernel drops a nexthop object whose port loses its carrier, and
		// FRR 8.4's zebra, not told, never puts it back when the port
		// comes up (the router kept routing to one host only).
		b.WriteString("no zebra nexthop kernel enable\n!\n")
	}
	b.WriteString("route-map lb6-in permit 10\n set ipv6 next-hop prefer-global\nexit\n")
	fmt.Fprintf(&b, "!\nrouter bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n", ToRASN, t.Address)
	b.WriteString(" neighbor lb peer-group\n neighbor lb remote-as " + strconv.Itoa(HostASN) + "\n")
	b.WriteString(" neighbor lb6 peer-group\n neighbor lb6 remote-as " + strconv.Itoa(HostASN) + "\n")
	if password != "" {
		fmt.Fprintf(&b, " neighbor lb password %s\n neighbor lb6 password %s\n", password, password)
	}
	for _, h := range t.hs.Hosts {
		// The BFD profile per neighbour: FRR 8.4 does not pass a peer
		// group's on (its sessions ran at the 300 ms default).
		a, a6 := t.PeerAddress(h, false), t.PeerAddress(h, true)
		fmt.Fprintf(&b, " neighbor %s peer-group lb\n neighbor %s bfd profile fast\n", a, a)
		fmt.Fprintf(&b, " neighbor %s peer-group lb6\n neighbor %s bfd profile fast\n", a6, a6)
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n")
	b.WriteString(" address-family ipv6 unicast\n  neighbor lb6 activate\n  neighbor lb6 route-map lb6-in in\n  maximum-paths 8\n exit-address-family\nexit\n!\n")
	fmt.Fprintf(&b, "bfd\n profile fast\n  receive-interval %d\n  transmit-interval %d\n  detect-multiplier %d\n exit\nexit\n!\n", t.bfd.Milliseconds(), t.bfd.Milliseconds(), BFDMultiplier)
	return b.String()
}

// upPort cables h to its port p of the router: a veth pair, the
// router's end PREFIX-pI and the host's portLink, with a /31 and a /64.
// The router ignores a route's next hop on a port without carrier
// (ignore_routes_with_linkdown), as a router's hardware stops using a
// port that went down.
func (t *ToR) upPort(h *Host, p port) error {
	steps := [][]string{
		{"-n", t.Netns, "link", "add", p.link, "type", "veth", "peer", "name", portLink, "netns", h.Netns},
		{"-n", t.Netns, "addr", "add", p.router + "/31", "dev", p.link},
		{"-n", t.Netns, "addr", "add", p.router6 + "/64", "dev", p.link, "nodad"},
		{"-n", t.Netns, "link", "set", p.link, "up"},
		{"-n", h.Netns, "addr", "add", p.host + "/31", "dev", portLink},
		{"-n", h.Netns, "addr", "add", p.host6 + "/64", "dev", portLink, "nodad"},
		{"-n", h.Netns, "link", "set", portLink, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	if err := run("ip", "netns", "exec", t.Netns, "sysctl", "-qw",
		"net.ipv4.conf.all.ignore_routes_with_linkdown=1", "net.ipv6.conf.all.ignore_routes_with_linkdown=1",
		"net.ipv4.conf."+p.link+".ignore_routes_with_linkdown=1", "net.ipv6.conf."+p.link+".ignore_routes_with_linkdown=1"); err != nil {
		return err
	}
	// The host keeps its port's IPv6 address while the port is down, as
	// a host's network configuration would put it back.
	return run("ip", "netns", "exec", h.Netns, "sysctl", "-qw", "net.ipv6.conf."+portLink+".keep_addr_on_down=1")
}

// SetPort takes h's routed port down (its end: the router's end loses
// its carrier, as a router port does when a host's link goes down) or
// up again (BGPOptions.RoutedPorts).
func (t *ToR) SetPort(h *Host, up bool) error {
	p, ok := t.ports[h.Name]
	if !ok {
		return fmt.Errorf("lbhosts: %s has no routed port (BGPOptions.RoutedPorts)", h.Name)
	}
	if !up {
		return ip("-n", h.Netns, "link", "set", portLink, "down")
	}
	if err := ip("-n", h.Netns, "link", "set", portLink, "up"); err != nil {
		return err
	}
	// The kernel dropped the routes through the port with it.
	return t.portRoutes(h, p)
}

// portRoutes routes the clients' networks from h through its port.
func (t *ToR) portRoutes(h *Host, p port) error {
	if err := ip("-n", h.Netns, "route", "replace", clientNet+".0/24", "via", p.router, "dev", portLink); err != nil {
		return err
	}
	return ip("-n", h.Netns, "-6", "route", "replace", "fd00:251::/64", "via", p.router6, "dev", portLink)
}

// RouterPeer is h's peering with the router on IPv4 (IPv6 with v6): the
// peer's name in BGPSettings ("tor" and "tor6", or per routed port
// "tor-HOST" and "tor6-HOST"), the router's address and h's
// (PeerAddress).
func (t *ToR) RouterPeer(h *Host, v6 bool) (name, router, host string) {
	name, router = "tor", t.Address
	if v6 {
		name, router = "tor6", t.Address6
	}
	if p, ok := t.ports[h.Name]; ok {
		name, router = name+"-"+h.Name, p.router
		if v6 {
			router = p.router6
		}
	}
	return name, router, t.PeerAddress(h, v6)
}

// PeerAddress is h's address the router peers with (and routes to): its
// routed port's with BGPOptions.RoutedPorts, else its own on the hosts'
// network; IPv6 with v6.
func (t *ToR) PeerAddress(h *Host, v6 bool) string {
	if p, ok := t.ports[h.Name]; ok {
		if v6 {
			return p.host6
		}
		return p.host
	}
	if v6 {
		return h.Address6
	}
	return h.Address
}

// PeerAddresses are the hosts' PeerAddress but those named in except.
func (t *ToR) PeerAddresses(v6 bool, except ...string) []string {
	var out []string
	for _, h := range t.hs.Hosts {
		if !slices.Contains(except, h.Name) {
			out = append(out, t.PeerAddress(h, v6))
		}
	}
	return out
}

// upHost starts h's FRR (an empty configuration) and announcer, and
// routes the clients' network back through the router.
func (t *ToR) upHost(h *Host, router string) error {
	dir, err := frrDir(h.frrDir())
	if err != nil {
		return err
	}
	if err := os.WriteFile(h.FRRConfig(), []byte("frr defaults traditional\n!\n"), 0o640); err != nil {
		return err
	}
	if err := os.Chown(h.FRRConfig(), 0, mustGid("frr")); err != nil {
		return err
	}
	// frr-reload.py and vtysh read <confdir>/<pathspace>/vtysh.conf.
	if err := os.MkdirAll(filepath.Join("/etc/frr", h.Netns), 0o755); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join("/etc/frr", h.Netns, "vtysh.conf"), nil, 0o644)
	// Kept across a link down and up (SetLink): without them the host
	// answers its clients through its default gateway, the local cloud's
	// router, which has no route to them.
	if p, ok := t.ports[h.Name]; ok {
		if err := t.portRoutes(h, p); err != nil {
			return err
		}
	} else if err := h.addRoutes([]string{"route", "replace", clientNet + ".0/24", "via", t.Address},
		[]string{"-6", "route", "replace", "fd00:251::/64", "via", t.Address6}); err != nil {
		return err
	}
	cmds, err := startFRR(h.Netns, dir, h.FRRConfig())
	h.mu.Lock()
	h.l4 = append(h.l4, cmds...)
	h.frr = cmds
	h.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(h.ConfigDir, "bgp"), 0o755); err != nil {
		return err
	}
	ann, err := start(h.Netns, filepath.Join(h.dir, "announce.log"), router, "-announce", filepath.Join(h.ConfigDir, "bgp"))
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.l4 = append(h.l4, ann)
	h.mu.Unlock()
	return nil
}

func mustGid(group string) int {
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0
	}
	gid, _ := strconv.Atoi(g.Gid)
	return gid
}

// KillFRR kills h's FRR daemons with SIGKILL (a crashed router daemon:
// its sessions and BFD stop at once, its routes stay in no one's table).
func (h *Host) KillFRR() {
	h.mu.Lock()
	cmds := h.frr
	h.mu.Unlock()
	for _, c := range cmds {
		stop(c, syscall.SIGKILL)
	}
}

// RestartFRR starts h's FRR again after KillFRR, from the configuration
// lbhost last wrote.
func (h *Host) RestartFRR() error {
	cmds, err := startFRR(h.Netns, h.frrDir(), h.FRRConfig())
	h.mu.Lock()
	h.l4 = append(h.l4, cmds...)
	h.frr = cmds
	h.mu.Unlock()
	return err
}

// BFDInterval is the BFD profile's transmit and receive interval.
func (t *ToR) BFDInterval() time.Duration { return t.bfd }

// BGPSettings is load_balancer.settings for the bgp module: LBSettings
// with each host's FRR and the peering with the router.
func (t *ToR) BGPSettings(bfd bool) map[string]any {
	s := t.hs.LBSettings()
	for _, h := range t.hs.Hosts {
		hm := s["hosts"].(map[string]any)[h.Name].(map[string]any)
		hm["frr_config"], hm["frr_pathspace"] = h.FRRConfig(), h.FRRPathspace()
	}
	peer := func(name, addr string) map[string]any {
		p := map[string]any{"name": name, "address": addr, "asn": ToRASN, "keepalive_time": 1, "hold_time": 3}
		if bfd {
			p["bfd_profile"] = "fast"
		}
		if t.PasswordFile != "" {
			p["password_file"] = t.PasswordFile
		}
		return p
	}
	peers := []any{peer("tor", t.Address), peer("tor6", t.Address6)}
	if t.ports != nil {
		// A peer per port: the router's end, for the host on it; the
		// host's end is its address on that peer's link.
		peers = nil
		for _, h := range t.hs.Hosts {
			addrs := map[string]any{}
			for _, v6 := range []bool{false, true} {
				name, router, host := t.RouterPeer(h, v6)
				p := peer(name, router)
				p["hosts"] = []any{h.Name}
				peers = append(peers, p)
				addrs[name] = host
			}
			s["hosts"].(map[string]any)[h.Name].(map[string]any)["peer_addresses"] = addrs
		}
	}
	s["bgp"] = map[string]any{
		"asn":          HostASN,
		"peers":        peers,
		"bfd_profiles": []any{map[string]any{"name": "fast", "receive_interval_ms": t.bfd.Milliseconds(), "transmit_interval_ms": t.bfd.Milliseconds(), "detect_multiplier": BFDMultiplier}},
		"pools":        []any{map[string]any{"name": "web", "prefixes": []any{BGPPool, BGPPool6}, "communities": []any{"64513:100", "no-export"}, "local_preference": 200}},
	}
	return s
}

// Nexthops are the router's next hops for addr now (its /32 or /128
// route; none without one), but those it does not use: on a port
// without carrier.
func (t *ToR) Nexthops(addr string) []string {
	fam := "-4"
	if strings.Contains(addr, ":") {
		fam = "-6"
	}
	out, err := exec.Command("ip", "-n", t.Netns, "-j", fam, "route", "show", addr).Output()
	if err != nil {
		return nil
	}
	var routes []struct {
		Dst      string   `json:"dst"`
		Gateway  string   `json:"gateway"`
		Flags    []string `json:"flags"`
		Nexthops []struct {
			Gateway string   `json:"gateway"`
			Flags   []string `json:"flags"`
		} `json:"nexthops"`
	}
	if json.Unmarshal(out, &routes) != nil {
		return nil
	}
	// A next hop on a port without carrier is not used
	// (ignore_routes_with_linkdown: BGPOptions.RoutedPorts).
	var hops []string
	for _, r := range routes {
		if r.Gateway != "" && !slices.Contains(r.Flags, "linkdown") {
			hops = append(hops, r.Gateway)
		}
		for _, n := range r.Nexthops {
			if !slices.Contains(n.Flags, "linkdown") {
				hops = append(hops, n.Gateway)
			}
		}
	}
	return hops
}

// Sessions are the router's BGP sessions: peer address → state
// ("Established", "Active", ...).
func (t *ToR) Sessions() (map[string]string, error) {
	out, err := exec.Command("vtysh", "-N", t.Netns, "-c", "show bgp neighbors json").Output()
	if err != nil {
		return nil, fmt.Errorf("vtysh: %w", err)
	}
	var peers map[string]struct {
		State string `json:"bgpState"`
	}
	if err := json.Unmarshal(out, &peers); err != nil {
		return nil, err
	}
	s := map[string]string{}
	for a, p := range peers {
		s[a] = p.State
	}
	return s, nil
}

// BFDPeers are the router's BFD sessions: peer address → status ("up",
// "down", "init").
func (t *ToR) BFDPeers() (map[string]string, error) {
	out, err := exec.Command("vtysh", "-N", t.Netns, "-c", "show bfd peers json").Output()
	if err != nil {
		return nil, fmt.Errorf("vtysh: %w", err)
	}
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &peers); err != nil {
		return nil, err
	}
	s := map[string]string{}
	for _, p := range peers {
		s[p.Peer] = p.Status
	}
	return s, nil
}

// WaitUp waits until the router has every host's BGP sessions
// established and, with bfd, their BFD sessions up: a BGP session comes
// back (a restarted FRR, a link up) before its BFD session does, and
// until then only the hold timer would notice the host going away again.
func (t *ToR) WaitUp(ctx context.Context, bfd bool, timeout time.Duration) error {
	return testkit.Poll(ctx, 50*time.Millisecond, timeout, "every BGP session established and its BFD up", func(context.Context) error {
		s, err := t.Sessions()
		if err != nil {
			return err
		}
		var b map[string]string
		if bfd {
			if b, err = t.BFDPeers(); err != nil {
				return err
			}
		}
		for _, h := range t.hs.Hosts {
			for _, a := range []string{t.PeerAddress(h, false), t.PeerAddress(h, true)} {
				if s[a] != "Established" {
					return fmt.Errorf("BGP sessions %v", s)
				}
				if bfd && b[a] != "up" {
					return fmt.Errorf("BFD sessions %v", b)
				}
			}
		}
		return nil
	})
}

// Client is an HTTP client in the clients' namespace whose connections
// come from the client address of index i (mod the number of clients).
func (t *ToR) Client(i int, v6 bool, timeout time.Duration) *http.Client {
	src := t.Clients[i%len(t.Clients)]
	if v6 {
		src = t.Clients6[i%len(t.Clients6)]
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := localcloud.InNetns(t.ClientNetns, func() error {
			var err error
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: timeout}
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// Stop stops the router's FRR and removes its and the clients'
// namespaces (the hosts' FRR and announcers stop with the hosts).
func (t *ToR) Stop() {
	t.mu.Lock()
	cmds := t.daemons
	t.daemons = nil
	t.mu.Unlock()
	for _, c := range cmds {
		stop(c, syscall.SIGTERM)
	}
	for _, ns := range []string{t.ClientNetns, t.Netns} {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			_ = ip("netns", "del", ns)
		}
	}
	_ = os.RemoveAll(t.dir)
	_ = os.RemoveAll(filepath.Join("/etc/frr", t.Netns))
	for _, h := range t.hs.Hosts {
		_ = os.RemoveAll(filepath.Join("/etc/frr", h.Netns))
		_ = os.RemoveAll(h.frrDir())
	}
}

// Outage is what clients saw during an action: requests sent, lost, and
// the span from the first lost request to the last (0 when none was).
type Outage struct {
	Requests, Lost int
	Span           time.Duration
	// Errors count the lost requests by what the client saw (a timeout,
	// a refused or reset connection, a status).
	Errors map[string]int
}

func (o Outage) String() string {
	s := fmt.Sprintf("%d of %d requests lost, outage %s", o.Lost, o.Requests, o.Span.Round(10*time.Millisecond))
	if len(o.Errors) > 0 {
		s += fmt.Sprintf(" %v", o.Errors)
	}
	return s
}

// errorKind is what a failed request saw, without addresses or ports.
func errorKind(err error, status int) string {
	switch {
	case err == nil:
		return "status " + strconv.Itoa(status)
	case os.IsTimeout(err):
		if strings.Contains(err.Error(), "dial") {
			return "connect timeout"
		}
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	}
	return "other"
}

// MeasureDuring sends GET url at 20 requests per second (each a new
// connection from the next client address, 1 s timeout) from one second
// before action until two seconds after it returned.
func (t *ToR) MeasureDuring(url string, v6 bool, action func()) Outage {
	type result struct {
		at   time.Time
		ok   bool
		kind string
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	done := make(chan struct{})
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				at := time.Now()
				resp, err := t.Client(i, v6, time.Second).Get(url)
				ok := err == nil && resp.StatusCode == http.StatusOK
				kind := ""
				if err == nil {
					resp.Body.Close()
					kind = errorKind(nil, resp.StatusCode)
				} else {
					kind = errorKind(err, 0)
				}
				mu.Lock()
				results = append(results, result{at, ok, kind})
				mu.Unlock()
			}(i)
		}
	}()
	time.Sleep(time.Second)
	action()
	time.Sleep(2 * time.Second)
	close(done)
	<-loop
	wg.Wait()
	o := Outage{Requests: len(results), Errors: map[string]int{}}
	var first, last time.Time
	for _, r := range results {
		if r.ok {
			continue
		}
		o.Lost++
		o.Errors[r.kind]++
		if first.IsZero() || r.at.Before(first) {
			first = r.at
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	if o.Lost > 0 {
		o.Span = last.Sub(first) + 50*time.Millisecond
	}
	return o
}

// Logs are the tails of the router's and the hosts' FRR logs, for a
// failing test's message.
func (t *ToR) Logs() string {
	var b strings.Builder
	dirs := []string{t.dir}
	for _, h := range t.hs.Hosts {
		dirs = append(dirs, h.frrDir())
	}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.log"))
		outs, _ := filepath.Glob(filepath.Join(d, "*.out"))
		for _, f := range append(files, outs...) {
			data, _ := os.ReadFile(f)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) > 8 {
				lines = lines[len(lines)-8:]
			}
			fmt.Fprintf(&b, "== %s\n%s\n", f, strings.Join(lines, "\n"))
		}
	}
	return b.String()
}
