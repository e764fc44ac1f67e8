// A hand-made load balancer on the LB hosts, as a bare-metal team runs
// one before tfccm: a keepalived vrrp_instance written into keepalived's
// main configuration and an HAProxy of its own in front of the nodes.

package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Handmade describes a hand-made load balancer.
type Handmade struct {
	// Instance names the vrrp_instance; VIP, VRID its address and virtual
	// router id (on Hosts.Interface).
	Instance string
	VIP      string
	VRID     int
	// Port is served by HAProxy, proxied to Backends ("addr:port").
	Port     int
	Backends []string
}

// AddHandmade writes hm's vrrp_instance into every host's keepalived main
// configuration (the first host highest priority, unicast peers between
// the hosts) and reloads keepalived, and starts a hand-made HAProxy on
// each (its own process and configuration, binding the VIP). It returns
// a function stopping the HAProxies.
func (hs *Hosts) AddHandmade(hm Handmade) (func(), error) {
	var cmds []*exec.Cmd
	stopAll := func() {
		for _, c := range cmds {
			stop(c, syscall.SIGTERM)
		}
	}
	for i, h := range hs.Hosts {
		var peers []string
		for _, o := range hs.Hosts {
			if o != h {
				peers = append(peers, "        "+o.Address)
			}
		}
		block := fmt.Sprintf(`
# %[1]s: the web VIP, set up by hand.
vrrp_instance %[1]s {
    state BACKUP
    interface %[2]s
    virtual_router_id %[3]d
    priority %[4]d
    advert_int 1
    unicast_src_ip %[5]s
    unicast_peer {
%[6]s
    }
    virtual_ipaddress {
        %[7]s/24 dev %[2]s
    }
}
`, hm.Instance, hs.Interface, hm.VRID, 200-10*i, h.Address, strings.Join(peers, "\n"), hm.VIP)
		f, err := os.OpenFile(h.KeepalivedConfig, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(block)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			err = h.ReloadKeepalived()
		}
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("hand-made instance on %s: %w", h.Name, err)
		}
		cfg := filepath.Join(h.dir, "handmade-haproxy.cfg")
		var servers []string
		for j, b := range hm.Backends {
			servers = append(servers, fmt.Sprintf("    server n%d %s check inter 1s", j, b))
		}
		body := fmt.Sprintf(`global
    pidfile %s
defaults
    mode tcp
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend handmade
    bind %s:%d
    default_backend nodes
backend nodes
%s
`, filepath.Join(h.dir, "handmade-haproxy.pid"), hm.VIP, hm.Port, strings.Join(servers, "\n"))
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			stopAll()
			return nil, err
		}
		cmd, err := startArgv(filepath.Join(h.dir, "handmade-haproxy.log"), h.inHost("haproxy", "-db", "-f", cfg))
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("hand-made HAProxy on %s: %w", h.Name, err)
		}
		cmds = append(cmds, cmd)
	}
	return stopAll, nil
}

// ReloadKeepalived sends keepalived SIGHUP, as `systemctl reload
// keepalived` does.
func (h *Host) ReloadKeepalived() error {
	b, err := os.ReadFile(h.KeepalivedPIDFile)
	if err != nil {
		return err
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid < 2 {
		return fmt.Errorf("keepalived pid file %s: no pid", h.KeepalivedPIDFile)
	}
	return syscall.Kill(pid, syscall.SIGHUP)
}
