// The layer-4 variant on test hosts: lbhost-router, conntrackd and conntrack
// entries.

package hosttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// L4Options configure StartL4.
type L4Options struct {
	// Router is the lbhost-router binary (make build: bin/lbhost-router).
	Router string
	// SyncConntrack runs Debian's conntrackd on every host, syncing
	// connection state to the other hosts (FTFW over UDP on eth0, states
	// injected straight into the kernel's table), so established
	// connections survive a VRRP failover. Two hosts at most.
	SyncConntrack bool
}

// StartL4 readies the hosts for the baremetal set's l4 variant: IP
// forwarding on, lbhost-router -l4 <config_dir>/l4 running (it loads the
// nftables rules of lbhost_l4_frontend), and optionally conntrackd. Stop
// stops them.
func (hs *Hosts) StartL4(opts L4Options) error {
	if opts.SyncConntrack && len(hs.Hosts) > 2 {
		return fmt.Errorf("lbhosts: conntrack sync supports two hosts, not %d", len(hs.Hosts))
	}
	if _, err := os.Stat(opts.Router); err != nil {
		return fmt.Errorf("lbhosts: lbhost-router: %w (make build builds bin/lbhost-router)", err)
	}
	if _, err := exec.LookPath("conntrackd"); opts.SyncConntrack && err != nil {
		return fmt.Errorf("lbhosts: conntrackd is not installed (Debian's conntrackd; make tools installs it): %w", err)
	}
	for _, h := range hs.Hosts {
		// A synced state's TCP window is not the one the new master would
		// track: be liberal, as conntrackd's manual advises.
		for _, kv := range []string{"net.ipv4.ip_forward=1", "net.netfilter.nf_conntrack_tcp_be_liberal=1"} {
			if err := run("ip", "netns", "exec", h.Netns, "sysctl", "-qw", kv); err != nil {
				return fmt.Errorf("lbhosts: %s: %w", h.Name, err)
			}
		}
		if err := os.MkdirAll(filepath.Join(h.ConfigDir, "l4"), 0o755); err != nil {
			return err
		}
		router, err := start(h.Netns, filepath.Join(h.dir, "router.log"), opts.Router, "-l4", filepath.Join(h.ConfigDir, "l4"))
		if err != nil {
			return fmt.Errorf("lbhosts: %s: %w", h.Name, err)
		}
		h.mu.Lock()
		h.l4 = append(h.l4, router)
		h.mu.Unlock()
		if !opts.SyncConntrack || len(hs.Hosts) < 2 {
			continue
		}
		var peer *Host
		for _, o := range hs.Hosts {
			if o != h {
				peer = o
			}
		}
		conf := filepath.Join(h.dir, "conntrackd.conf")
		if err := os.WriteFile(conf, []byte(ConntrackdConfig(h.Address, peer.Address, hs.Interface, h.dir)), 0o600); err != nil {
			return err
		}
		_ = os.Remove(filepath.Join(h.dir, "conntrackd.lock"))
		ctd, err := start(h.Netns, filepath.Join(h.dir, "conntrackd.out"), "conntrackd", "-C", conf)
		if err != nil {
			return fmt.Errorf("lbhosts: %s: %w", h.Name, err)
		}
		h.mu.Lock()
		h.l4 = append(h.l4, ctd)
		h.mu.Unlock()
		if err := waitFile(context.Background(), filepath.Join(h.dir, "conntrackd.ctl")); err != nil {
			log, _ := os.ReadFile(filepath.Join(h.dir, "conntrackd.log"))
			return fmt.Errorf("lbhosts: %s: conntrackd: %w\n%s", h.Name, err, log)
		}
	}
	return nil
}

// ConntrackdConfig is a conntrackd.conf syncing the conntrack table of the
// host at self with the one at peer over iface (FTFW: reliable, resent
// until acknowledged), its lock, socket and log in dir. Received states go
// straight into the kernel's table (no external cache, so no failover
// script is needed: the new VRRP master already has them). The hosts' own
// traffic (SSH, VRRP) is not synced.
func ConntrackdConfig(self, peer, iface, dir string) string {
	lines := []string{
		"Sync {",
		"	Mode FTFW {",
		"		DisableExternalCache on",
		"		StartupResync on",
		"	}",
		"	UDP {",
		"		IPv4_address " + self,
		"		IPv4_Destination_Address " + peer,
		"		Port 3780",
		"		Interface " + iface,
		"		Checksum on",
		"	}",
		"}",
		"General {",
		"	Systemd off",
		"	HashSize 8192",
		"	HashLimit 65536",
		"	LogFile " + filepath.Join(dir, "conntrackd.log"),
		"	Syslog off",
		"	LockFile " + filepath.Join(dir, "conntrackd.lock"),
		"	UNIX {",
		"		Path " + filepath.Join(dir, "conntrackd.ctl"),
		"	}",
		"	NetlinkBufferSize 2097152",
		"	NetlinkBufferSizeMaxGrowth 8388608",
		"	Filter From Userspace {",
		"		Protocol Accept {",
		"			TCP",
		"			UDP",
		"		}",
		"		Address Ignore {",
		"			IPv4_address 127.0.0.1",
		"			IPv4_address " + self,
		"			IPv4_address " + peer,
		"		}",
		"	}",
		"}",
	}
	return strings.Join(lines, "\n") + "\n"
}

// ConntrackEntries counts the host's conntrack entries to or from addr.
func (h *Host) ConntrackEntries(addr string) int {
	out, err := exec.Command("ip", "netns", "exec", h.Netns, "conntrack", "-L", "-d", addr).Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}
