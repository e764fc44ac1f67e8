// Finding the interface a VIP belongs on, and checking the agent's capabilities.

package announce

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// ErrOutside is returned when no interface's network holds the address.
var ErrOutside = errors.New("outside every network of the node's interfaces")

// Interface is the interface a VIP goes on: name when set (it must exist),
// else the first interface (by index) with a network that contains addr.
// Addresses added as /32 or /128 (VIPs) are no networks.
func Interface(addr netip.Addr, name string) (*net.Interface, error) {
	if name != "" {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, fmt.Errorf("interface %q: %w", name, err)
		}
		return ifi, nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	for i := range ifs {
		ifi := &ifs[i]
		if ifi.Flags&net.FlagLoopback != 0 || ifi.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			p, err := netip.ParsePrefix(a.String())
			if err != nil || p.IsSingleIP() {
				continue
			}
			if p.Masked().Contains(addr.Unmap()) {
				return ifi, nil
			}
		}
	}
	return nil, fmt.Errorf("%s: %w", addr, ErrOutside)
}

// capNetRaw is CAP_NET_RAW's bit (linux/capability.h).
const capNetRaw = 13

// CheckCapabilities returns an error naming the capability the process
// lacks to answer ARP and neighbor solicitations and send announcements
// (NET_RAW: packet and raw ICMPv6 sockets).
func CheckCapabilities() error {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	eff, err := effectiveCaps(string(raw))
	if err != nil {
		return err
	}
	if eff&(1<<capNetRaw) == 0 {
		return errors.New("the agent lacks capability NET_RAW: it cannot answer for or announce VIPs")
	}
	return nil
}

// effectiveCaps reads CapEff from a /proc/<pid>/status text.
func effectiveCaps(status string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("parse CapEff %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}
