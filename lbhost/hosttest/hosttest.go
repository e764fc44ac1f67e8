// Hosts and Host: starting LB hosts in network namespaces, and their sshd, HAProxy and keepalived.

package hosttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hostfiles"
	"github.com/tfccm/tfccm/test/localcloud"
)

// Options configure Start.
type Options struct {
	// Cloud is the local cloud whose bridge the hosts join.
	Cloud *localcloud.Cloud
	// Names of the hosts (1-4 of [a-z0-9-], at most 4 characters). Default lb-a, lb-b.
	Names []string
	// Dir holds keys, configurations and each host's config_dir. Default: a
	// new temporary directory (removed by Stop).
	Dir string
	// SudoUser, when set, is the hosts' SSH login instead of root: an
	// unprivileged user of this machine (created by the preparation if
	// missing) with exactly lbhost/hostfiles' sudoers rules and group
	// tfccm, HAProxy's master socket's, as `tfccm lbhost prepare` sets a
	// host up; the settings then say sudo = true.
	SudoUser string
	// Fresh leaves the hosts as fresh Debian hosts: sshd authorizes
	// Hosts.AdminKey for root, nothing else is prepared or running. Each
	// has its own /etc (an overlay over the machine's), /run, /root and
	// /home, so the preparation (`tfccm lbhost prepare ... | ssh
	// root@ADDRESS sh`) writes everything at its default path and creates
	// users and groups on that host alone; StartServices then plays
	// systemd's part.
	Fresh bool
}

// Host is one running load-balancer host.
type Host struct {
	Name    string
	Netns   string
	Address string // SSH and VRRP unicast address
	// Address6 is the host's IPv6 address on the cloud bridge (in
	// fd00:250::/64, the node network's): its IPv6 VRRP adverts' source.
	Address6 string
	// NodeNetAddress is the host's address on the cloud's node network
	// (10.250.0.0/24): HAProxy reaches the nodes from it.
	NodeNetAddress string
	// ConfigDir is the lbhost provider's config_dir on the host.
	ConfigDir string
	// HostKey is the host's public key (authorized_keys format).
	HostKey string
	// KeepalivedConfig and KeepalivedPIDFile are keepalived's main
	// configuration and its parent's pid file.
	KeepalivedConfig, KeepalivedPIDFile string
	// User is the SSH login (root, or Options.SudoUser with sudo).
	User string

	dir     string
	gateway string
	fresh   bool // Options.Fresh
	// holder is the process whose mount namespace is the host's (inHost).
	holder   *exec.Cmd
	holderMu sync.Mutex
	// haproxyArgs are HAProxy's arguments from the drop-in the
	// preparation installed.
	haproxyArgs []string
	mu          sync.Mutex
	sshd        *exec.Cmd
	haproxy     *exec.Cmd
	keepalive   *exec.Cmd
	l4          []*exec.Cmd // lbhost-router -l4 and conntrackd (StartL4); FRR and lbhost-router -announce (StartBGP)
	frr         []*exec.Cmd // zebra, bgpd and bfdd (StartBGP)
	// routes are the static routes via eth0 beyond the default one (ip
	// route arguments): the kernel drops them with the link, and
	// SetLink puts them back as the host's network configuration would.
	routes [][]string
}

// Hosts is a running set of load-balancer hosts.
type Hosts struct {
	Hosts []*Host
	// PrivateKey is the path of the client key every host authorizes for
	// its login (none with Options.Fresh).
	PrivateKey string
	// AdminKey is the path of the key a fresh host authorizes for root
	// (Options.Fresh): the user's own.
	AdminKey string
	// VIPPool is where VIPs come from (the upper half of the cloud's pool).
	VIPPool string
	// VIPPool6 is where IPv6 VIPs come from: a /112 of the node network's
	// fd00:250::/64, so the cloud netns reaches them on its bridge.
	VIPPool6 string
	// Interface carries VRRP and the VIPs on every host.
	Interface string

	cloud    *localcloud.Cloud
	dir      string
	ownDir   bool
	sudoUser string
	fresh    bool
	router   string // P.1/24 on the cloud's bridge

	mu         sync.Mutex
	routerSSHD *exec.Cmd
	// routerHostKey is the cloud router's sshd's host key, once StartRouter ran.
	routerHostKey string
}

// NodeGateway is the local cloud router's address on the node network
// (examples/local/infra): the nodes' default gateway.
const NodeGateway = "10.250.0.1"

// Start brings the hosts up. On failure it removes what it made.
func Start(ctx context.Context, opts Options) (_ *Hosts, err error) {
	if opts.Cloud == nil {
		return nil, errors.New("lbhosts: Options.Cloud is required")
	}
	if len(opts.Names) == 0 {
		opts.Names = []string{"lb-a", "lb-b"}
	}
	pool, err := netip.ParsePrefix(opts.Cloud.VIPPool)
	if err != nil || pool.Bits() != 24 {
		return nil, fmt.Errorf("lbhosts: the cloud's VIP pool %q is not a /24", opts.Cloud.VIPPool)
	}
	base := pool.Addr().As4()
	at := func(i byte) string { return netip.AddrFrom4([4]byte{base[0], base[1], base[2], i}).String() }
	hs := &Hosts{cloud: opts.Cloud, dir: opts.Dir, Interface: "eth0", VIPPool: at(128) + "/25", VIPPool6: "fd00:250::1:0/112", router: at(1) + "/24", sudoUser: opts.SudoUser, fresh: opts.Fresh}
	if hs.dir == "" {
		if hs.dir, err = os.MkdirTemp("", "lbhosts-"); err != nil {
			return nil, fmt.Errorf("lbhosts: %w", err)
		}
		hs.ownDir = true
	} else if err := os.MkdirAll(hs.dir, 0o700); err != nil {
		return nil, fmt.Errorf("lbhosts: %w", err)
	}
	defer func() {
		if err != nil {
			_ = hs.Stop()
		}
	}()
	bridge := opts.Cloud.Prefix + "-br"
	if err := ip("-n", opts.Cloud.CloudNetns, "addr", "add", hs.router, "dev", bridge); err != nil {
		return nil, err
	}
	hs.PrivateKey = filepath.Join(hs.dir, "client_key")
	if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tfccm-lbhosts", "-f", hs.PrivateKey); err != nil {
		return nil, err
	}
	if opts.Fresh {
		hs.AdminKey = filepath.Join(hs.dir, "admin_key")
		if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "admin", "-f", hs.AdminKey); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		return nil, fmt.Errorf("lbhosts: %w", err)
	}
	if opts.SudoUser != "" {
		if err := setUpSudoUser(opts.SudoUser, hs.dir); err != nil {
			return nil, fmt.Errorf("lbhosts: %w", err)
		}
	}
	for i, name := range opts.Names {
		h := &Host{Name: name, User: "root", Netns: opts.Cloud.Prefix + "-" + name, Address: at(byte(2 + i)), Address6: fmt.Sprintf("fd00:250::%x", 201+i), NodeNetAddress: fmt.Sprintf("10.250.0.%d", 201+i), dir: filepath.Join(hs.dir, name)}
		if opts.SudoUser != "" {
			h.User = opts.SudoUser
		}
		hs.Hosts = append(hs.Hosts, h)
		if err := hs.up(ctx, h, fmt.Sprintf("%s-l%d", opts.Cloud.Prefix, i), bridge); err != nil {
			return nil, fmt.Errorf("lbhosts: host %s: %w", name, err)
		}
	}
	return hs, nil
}

// up creates h's namespace and link, prepares it with `tfccm lbhost
// prepare`'s script, and starts sshd, HAProxy and keepalived in it from
// the files the script installed.
func (hs *Hosts) up(ctx context.Context, h *Host, link, bridge string) error {
	h.fresh = hs.fresh
	h.ConfigDir = filepath.Join(h.dir, "lbhost")
	h.KeepalivedConfig = filepath.Join(h.dir, "keepalived.conf")
	h.KeepalivedPIDFile = filepath.Join(h.dir, "keepalived.pid")
	if h.fresh {
		h.ConfigDir = h.MachinePath(hostfiles.DefaultConfigDir)
		h.KeepalivedConfig = h.MachinePath(hostfiles.KeepalivedConfig)
		h.KeepalivedPIDFile = h.MachinePath("/run/keepalived.pid")
	}
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return err
	}
	if err := h.makeSystemDirs(); err != nil {
		return err
	}
	cloud := hs.cloud.CloudNetns
	h.gateway = strings.Split(hs.router, "/")[0]
	for _, argv := range [][]string{
		{"netns", "add", h.Netns},
		{"-n", h.Netns, "link", "set", "lo", "up"},
		{"-n", cloud, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", h.Netns},
		{"-n", cloud, "link", "set", link, "master", bridge, "up"},
		{"-n", h.Netns, "addr", "add", h.Address + "/24", "dev", "eth0"},
		// On the node network too: a router host's routes go via node addresses.
		{"-n", h.Netns, "addr", "add", h.NodeNetAddress + "/24", "dev", "eth0"},
		{"-n", h.Netns, "addr", "add", h.Address6 + "/64", "dev", "eth0", "nodad"},
		{"-n", h.Netns, "link", "set", "eth0", "up"},
		{"-n", h.Netns, "route", "add", "default", "via", h.gateway},
	} {
		if err := ip(argv...); err != nil {
			return err
		}
	}
	// IPv6 on (a new netns may inherit it off), for the IPv6 VIPs.
	if err := run("ip", "netns", "exec", h.Netns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0"); err != nil {
		return err
	}
	if err := h.startHolder(); err != nil {
		return err
	}
	var err error
	if h.HostKey, err = writeSSHD(h.dir, h.Address, ""); err != nil {
		return err
	}
	if h.fresh {
		// Root's key is the admin's; nothing else is there yet.
		if err := authorize(h.MachinePath("/root/.ssh"), hs.AdminKey+".pub"); err != nil {
			return err
		}
		return h.StartSSHD()
	}
	// The preparation applies lbhost/hostfiles' sysctls in the namespace
	// (ip_nonlocal_bind: a backup's HAProxy binds the VIP it does not hold).
	if _, err := h.prepare(hs.PrivateKey + ".pub"); err != nil {
		return err
	}
	if err := h.StartSSHD(); err != nil {
		return err
	}
	return h.StartServices(ctx)
}

// StartServices starts HAProxy and keepalived as systemd would after the
// preparation's `systemctl restart haproxy keepalived`: HAProxy with the
// arguments of the drop-in it installed, keepalived with its main
// configuration.
func (h *Host) StartServices(ctx context.Context) error {
	dropIn, err := h.installedDropIn()
	if err != nil {
		return fmt.Errorf("the preparation's haproxy.service drop-in: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.haproxyArgs = hostfiles.HAProxyArgs(dropIn)
	h.haproxy, err = startHAProxy(h)
	if err != nil {
		return err
	}
	if err := waitFile(ctx, filepath.Join(h.ConfigDir, "master.sock")); err != nil {
		return fmt.Errorf("haproxy: %w (log %s)", err, filepath.Join(h.dir, "haproxy.log"))
	}
	h.mu.Unlock()
	err = h.StartKeepalived()
	h.mu.Lock()
	return err
}

// authorize writes the public key file pub as the authorized_keys of the
// .ssh directory dir.
func authorize(dir, pub string) error {
	b, err := os.ReadFile(pub)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "authorized_keys"), b, 0o600)
}

// writeSSHD writes an sshd's files into dir: a new host key (returned in
// authorized_keys format), authorized_keys with the client key clientPub
// and an sshd_config listening on listen:22. Without clientPub, the
// logins' own ~/.ssh/authorized_keys count, as on a real host.
func writeSSHD(dir, listen, clientPub string) (hostKey string, err error) {
	if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", filepath.Base(dir), "-f", filepath.Join(dir, "host_key")); err != nil {
		return "", err
	}
	pub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(pub))
	config := SSHDConfig(listen, 22, dir)
	if clientPub == "" {
		config = strings.Replace(config, "AuthorizedKeysFile "+dir+"/authorized_keys", "AuthorizedKeysFile .ssh/authorized_keys", 1)
		return f[0] + " " + f[1], os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600)
	}
	auth, err := os.ReadFile(clientPub)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600); err != nil {
		return "", err
	}
	// sshd reads authorized_keys as the login user (a sudo login too).
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), auth, 0o644); err != nil {
		return "", err
	}
	return f[0] + " " + f[1], nil
}

// startSSHD starts the sshd whose files writeSSHD wrote into dir (with
// wrap: the command that runs it in its namespaces), and waits until it serves
// (its pid file appears).
func startSSHD(dir string, wrap func(...string) []string) (*exec.Cmd, error) {
	_ = os.Remove(filepath.Join(dir, "sshd.pid"))
	cmd, err := startArgv(filepath.Join(dir, "sshd.log"), wrap("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config")))
	if err != nil {
		return nil, err
	}
	return cmd, waitFile(context.Background(), filepath.Join(dir, "sshd.pid"))
}

// StartSSHD (re)starts the host's sshd, with the host's own system paths
// (the authorized keys and sudoers rules the preparation installed).
func (h *Host) StartSSHD() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var err error
	h.sshd, err = startSSHD(h.dir, h.inHost)
	return err
}

// ShadowFile bind-mounts with over path in the host's mount namespace
// (its sshd's, every SSH login's and sudo's commands', HAProxy's and
// keepalived's), not the machine's: the hosts share this machine's file
// system, so a test hides or replaces a host's binary or file there
// without touching the real one. The namespace is private (unshare
// --mount): the mount does not leak out. The returned func undoes it.
func (h *Host) ShadowFile(path, with string) (undo func() error, err error) {
	h.mu.Lock()
	pid := h.sshd.Process.Pid
	h.mu.Unlock()
	ns := []string{"nsenter", "-t", strconv.Itoa(pid), "-m", "--"}
	if err := run(ns[0], append(ns[1:], "mount", "--bind", with, path)...); err != nil {
		return nil, fmt.Errorf("shadow %s on %s: %w", path, h.Name, err)
	}
	return func() error { return run(ns[0], append(ns[1:], "umount", path)...) }, nil
}

// StartKeepalived (re)starts keepalived in the foreground of its process.
func (h *Host) StartKeepalived() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = os.Remove(h.KeepalivedPIDFile)
	var err error
	cfg, pid, vrrp, checkers := h.KeepalivedConfig, h.KeepalivedPIDFile, filepath.Join(h.dir, "vrrp.pid"), filepath.Join(h.dir, "checkers.pid")
	if h.fresh { // the default paths, in the host's own /etc and /run
		cfg, pid, vrrp, checkers = hostfiles.KeepalivedConfig, "/run/keepalived.pid", "/run/vrrp.pid", "/run/checkers.pid"
	}
	h.keepalive, err = startArgv(filepath.Join(h.dir, "keepalived.log"), h.inHost("keepalived", "-n", "-l", "-D",
		"-f", cfg, "-p", pid, "-r", vrrp, "-c", checkers))
	if err != nil {
		return err
	}
	return waitFile(context.Background(), h.KeepalivedPIDFile)
}

// StopKeepalived stops keepalived with sig (SIGTERM: a clean stop that
// hands the VIPs over at once; SIGKILL: a crash the backups must detect)
// and waits for its processes to end.
func (h *Host) StopKeepalived(sig syscall.Signal) {
	h.mu.Lock()
	cmd := h.keepalive
	h.keepalive = nil
	h.mu.Unlock()
	stop(cmd, sig)
	// keepalived's VRRP child ends with its parent; make sure it has.
	if b, err := os.ReadFile(h.vrrpPIDFile()); err == nil {
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 1 {
			for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// StopSSHD stops the host's sshd (the host is unreachable over SSH; its
// HAProxy and keepalived keep running).
func (h *Host) StopSSHD() {
	h.mu.Lock()
	cmd := h.sshd
	h.sshd = nil
	h.mu.Unlock()
	stop(cmd, syscall.SIGTERM)
}

// SetLink takes the host's network link down or up: down, the host is
// unreachable and out of its VRRP groups; up, its IPv6 address, default
// route and static routes (addRoutes) come back, as its network
// configuration would put them back.
func (h *Host) SetLink(up bool) error {
	if !up {
		return ip("-n", h.Netns, "link", "set", "eth0", "down")
	}
	if err := ip("-n", h.Netns, "link", "set", "eth0", "up"); err != nil {
		return err
	}
	// The kernel dropped the default route with the link, and the IPv6
	// address (keep_addr_on_down is off by default), as a host's network
	// configuration puts back.
	if err := ip("-n", h.Netns, "addr", "replace", h.Address6+"/64", "dev", "eth0", "nodad"); err != nil {
		return err
	}
	if err := ip("-n", h.Netns, "route", "replace", "default", "via", h.gateway); err != nil {
		return err
	}
	h.mu.Lock()
	routes := h.routes
	h.mu.Unlock()
	for _, r := range routes {
		if err := ip(append([]string{"-n", h.Netns}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// addRoutes adds static routes via eth0 (ip route arguments with
// "replace", e.g. {"-6", "route", "replace", PREFIX, "via", ADDR}) that
// SetLink puts back after the link was down.
func (h *Host) addRoutes(routes ...[]string) error {
	for _, r := range routes {
		if err := ip(append([]string{"-n", h.Netns}, r...)...); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.routes = append(h.routes, routes...)
	h.mu.Unlock()
	return nil
}

// HasAddress reports whether addr is configured on the host's eth0 (held
// by the VRRP master).
func (h *Host) HasAddress(addr string) bool {
	out, err := exec.Command("ip", "-n", h.Netns, "-o", "addr", "show", "dev", "eth0").Output()
	return err == nil && strings.Contains(string(out), " "+addr+"/")
}

// DeviceOf names the interface that holds addr on the host ("" for none).
func (h *Host) DeviceOf(addr string) string {
	out, err := exec.Command("ip", "-n", h.Netns, "-o", "addr", "show").Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(f[3], addr+"/") {
			return strings.SplitN(f[1], "@", 2)[0]
		}
	}
	return ""
}

// AddSegment attaches every host and the cloud router to a second L2
// segment, as a second NIC on another VLAN would: a bridge in the cloud
// netns (the router's address the subnet's first host address) and on
// each host a veth link named iface into it (the host's address the
// subnet's 2+i), so the cloud netns reaches VIPs there. The links go with
// the namespaces.
func (hs *Hosts) AddSegment(iface string, subnet netip.Prefix) error {
	nth := func(n int) string {
		a := subnet.Addr()
		for range n {
			a = a.Next()
		}
		return fmt.Sprintf("%s/%d", a, subnet.Bits())
	}
	bridge := hs.cloud.Prefix + "-" + iface
	steps := [][]string{
		{"-n", hs.cloud.CloudNetns, "link", "add", bridge, "type", "bridge"},
		{"-n", hs.cloud.CloudNetns, "addr", "add", nth(1), "dev", bridge},
		{"-n", hs.cloud.CloudNetns, "link", "set", bridge, "up"},
	}
	for i, h := range hs.Hosts {
		port := fmt.Sprintf("%s-%s%d", hs.cloud.Prefix, iface[:min(len(iface), 3)], i)
		steps = append(steps,
			[]string{"-n", hs.cloud.CloudNetns, "link", "add", port, "type", "veth", "peer", "name", iface, "netns", h.Netns},
			[]string{"-n", hs.cloud.CloudNetns, "link", "set", port, "master", bridge, "up"},
			[]string{"-n", h.Netns, "addr", "add", nth(2 + i), "dev", iface},
			[]string{"-n", h.Netns, "link", "set", iface, "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return fmt.Errorf("lbhosts: segment %s: %w", iface, err)
		}
	}
	return nil
}

// Objects lists lbhost's objects on the host (fragments, claims, VRRP
// instances), as "<dir>/<file>".
func (h *Host) Objects() []string {
	var out []string
	for _, d := range []string{"fragments", "claims", "keepalived"} {
		entries, _ := os.ReadDir(filepath.Join(h.ConfigDir, d))
		for _, e := range entries {
			out = append(out, d+"/"+e.Name())
		}
	}
	return out
}

// Wipe removes lbhost's objects from the host and restarts HAProxy and
// keepalived with the host's own configuration only: a reinstalled host.
func (h *Host) Wipe() error {
	for _, d := range []string{"fragments", "claims", "keepalived", "pending", "vrrp-ids"} {
		if err := os.RemoveAll(filepath.Join(h.ConfigDir, d)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(h.ConfigDir, d), 0o755); err != nil {
			return err
		}
	}
	h.StopKeepalived(syscall.SIGTERM)
	h.mu.Lock()
	cmd := h.haproxy
	h.mu.Unlock()
	stop(cmd, syscall.SIGTERM)
	_ = os.Remove(filepath.Join(h.ConfigDir, "server-state"))
	var err error
	h.mu.Lock()
	h.haproxy, err = startHAProxy(h)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return h.StartKeepalived()
}

// startHAProxy starts HAProxy in master-worker mode with the arguments of
// the haproxy.service drop-in the preparation installed (the master
// socket's group tfccm, as shipped).
func startHAProxy(h *Host) (*exec.Cmd, error) {
	args := append([]string{"haproxy", "-W"}, h.haproxyArgs...)
	return startArgv(filepath.Join(h.dir, "haproxy.log"), h.inHost(args...))
}

// vrrpPIDFile is keepalived's VRRP child's pid file on this machine.
func (h *Host) vrrpPIDFile() string {
	if h.fresh {
		return h.MachinePath("/run/vrrp.pid")
	}
	return filepath.Join(h.dir, "vrrp.pid")
}

// RestartHAProxy stops HAProxy and starts it again as Start did.
func (h *Host) RestartHAProxy() error {
	h.StopHAProxy()
	h.mu.Lock()
	defer h.mu.Unlock()
	var err error
	if h.haproxy, err = startHAProxy(h); err != nil {
		return err
	}
	return WaitHAProxy(filepath.Join(h.ConfigDir, "master.sock"), 10*time.Second)
}

// StopHAProxy stops HAProxy (its master socket goes away).
func (h *Host) StopHAProxy() {
	h.mu.Lock()
	cmd := h.haproxy
	h.haproxy = nil
	h.mu.Unlock()
	stop(cmd, syscall.SIGTERM)
	_ = os.Remove(filepath.Join(h.ConfigDir, "master.sock"))
}

// Host returns the host called name (nil if none).
func (hs *Hosts) Host(name string) *Host {
	for _, h := range hs.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Master returns the host holding vip (nil if none does).
func (hs *Hosts) Master(vip string) *Host {
	for _, h := range hs.Hosts {
		if h.HasAddress(vip) {
			return h
		}
	}
	return nil
}

// LBSettings is load_balancer.settings for the baremetal set.
func (hs *Hosts) LBSettings() map[string]any {
	hosts := map[string]any{}
	for _, h := range hs.Hosts {
		hosts[h.Name] = map[string]any{
			"address": h.Address, "address6": h.Address6, "host_key": h.HostKey, "config_dir": h.ConfigDir,
			"keepalived_config": h.KeepalivedConfig, "keepalived_pid_file": h.KeepalivedPIDFile,
		}
		if h.fresh { // the defaults, each host's own
			hosts[h.Name] = map[string]any{"address": h.Address, "address6": h.Address6, "host_key": h.HostKey}
		}
		if h.User != "root" {
			hosts[h.Name].(map[string]any)["user"] = h.User
		}
	}
	settings := map[string]any{
		"hosts": hosts, "vip_pool": hs.VIPPool, "vip_pool6": hs.VIPPool6, "vrrp_interface": hs.Interface,
		"virtual_router_ids": "10-99", "ssh_private_key_file": hs.PrivateKey,
	}
	if hs.sudoUser != "" {
		settings["sudo"] = true
	}
	return settings
}

// StartRouter starts an sshd in the local cloud's router namespace on
// NodeGateway, authorizing the hosts' client key: the router the nodes'
// traffic really goes through, where the baremetal set's routes/ module
// then keeps the pod-range routes (RoutesSettings). Stop stops it.
func (hs *Hosts) StartRouter() error {
	dir := filepath.Join(hs.dir, "router")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("lbhosts: router: %w", err)
	}
	key, err := writeSSHD(dir, NodeGateway, hs.PrivateKey+".pub")
	if err != nil {
		return fmt.Errorf("lbhosts: router: %w", err)
	}
	cmd, err := startSSHD(dir, func(argv ...string) []string {
		return append([]string{"ip", "netns", "exec", hs.cloud.CloudNetns}, argv...)
	})
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.routerSSHD = cmd
	if err != nil {
		return fmt.Errorf("lbhosts: router: %w", err)
	}
	hs.routerHostKey = key
	return nil
}

// RoutesSettings is routes.settings for the baremetal set: the cloud's
// router once StartRouter ran, else the first host.
func (hs *Hosts) RoutesSettings() map[string]any {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	router := map[string]any{"address": hs.Hosts[0].Address, "host_key": hs.Hosts[0].HostKey}
	if hs.routerHostKey != "" {
		router = map[string]any{"address": NodeGateway, "host_key": hs.routerHostKey}
	}
	return map[string]any{"router": router, "ssh_private_key_file": hs.PrivateKey}
}

// Stop stops every process (the router's sshd too), removes the namespaces
// (and so the links) and the router address, and the directory when Start made it.
func (hs *Hosts) Stop() error {
	var errs []error
	hs.mu.Lock()
	stop(hs.routerSSHD, syscall.SIGTERM)
	hs.routerSSHD, hs.routerHostKey = nil, ""
	hs.mu.Unlock()
	for _, h := range hs.Hosts {
		h.mu.Lock()
		cmds := append([]*exec.Cmd{h.keepalive, h.haproxy, h.sshd}, h.l4...)
		h.keepalive, h.haproxy, h.sshd, h.l4 = nil, nil, nil, nil
		h.mu.Unlock()
		for _, c := range cmds {
			stop(c, syscall.SIGTERM)
		}
		h.holderMu.Lock()
		stop(h.holder, syscall.SIGKILL)
		h.holder = nil
		h.holderMu.Unlock()
		if _, err := os.Stat(filepath.Join("/run/netns", h.Netns)); err == nil {
			if err := ip("netns", "del", h.Netns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", hs.cloud.CloudNetns)); err == nil {
		_ = ip("-n", hs.cloud.CloudNetns, "addr", "del", hs.router, "dev", hs.cloud.Prefix+"-br")
	}
	if hs.ownDir {
		errs = append(errs, os.RemoveAll(hs.dir))
	}
	return errors.Join(errs...)
}

// ForTest starts hosts on cloud and stops them when the test ends (before
// the cloud goes: register it after localcloud.ForTest).
func ForTest(t testing.TB, cloud *localcloud.Cloud, names ...string) *Hosts {
	t.Helper()
	hs, err := Start(context.Background(), Options{Cloud: cloud, Names: names, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hs.Stop(); err != nil {
			t.Errorf("lbhosts: %v", err)
		}
	})
	return hs
}

// start runs argv in netns as a child process logging to logFile.
func start(netns, logFile string, argv ...string) (*exec.Cmd, error) {
	return startArgv(logFile, append([]string{"ip", "netns", "exec", netns}, argv...))
}

// startArgv runs argv as a child process logging to logFile.
func startArgv(logFile string, argv []string) (*exec.Cmd, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a test's Ctrl-C does not reach it first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return cmd, nil
}

// stop signals cmd and waits for it (SIGKILL after 10 s).
func stop(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func waitFile(ctx context.Context, path string) error {
	return testkit.Poll(ctx, 50*time.Millisecond, 10*time.Second, path+" appears", func(context.Context) error {
		_, err := os.Stat(path)
		return err
	})
}

func ip(args ...string) error { return run("ip", args...) }

func run(name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
