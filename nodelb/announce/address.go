// Adding, announcing and removing a VIP on an interface.

package announce

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Method is how a family's VIP is announced, as the status and plans say.
func Method(addr netip.Addr) string {
	if addr.Unmap().Is4() {
		return "gratuitous ARP"
	}
	return "unsolicited neighbor advertisement"
}

// hostAddr is addr as a netlink address of its own (/32 or /128).
func hostAddr(ifi *net.Interface, addr netip.Addr) *netlink.Addr {
	addr = addr.Unmap()
	ip := net.IP(addr.AsSlice())
	a := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(addr.BitLen(), addr.BitLen())}, LinkIndex: ifi.Index}
	if addr.Is6() {
		// No duplicate address detection: the VIP must answer at once, and
		// the holder rule already keeps it on one node.
		a.Flags = unix.IFA_F_NODAD
	}
	return a
}

// Add puts addr on ifi (idempotent).
func Add(ifi *net.Interface, addr netip.Addr) error {
	link, err := netlink.LinkByIndex(ifi.Index)
	if err != nil {
		return fmt.Errorf("link %s: %w", ifi.Name, err)
	}
	if err := netlink.AddrReplace(link, hostAddr(ifi, addr)); err != nil {
		return fmt.Errorf("add %s to %s: %w", addr, ifi.Name, err)
	}
	return nil
}

// Remove takes addr off ifi; an address that is not there is no error.
func Remove(ifi *net.Interface, addr netip.Addr) error {
	link, err := netlink.LinkByIndex(ifi.Index)
	if err != nil {
		if errors.As(err, new(netlink.LinkNotFoundError)) {
			return nil
		}
		return fmt.Errorf("link %s: %w", ifi.Name, err)
	}
	if err := netlink.AddrDel(link, hostAddr(ifi, addr)); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("remove %s from %s: %w", addr, ifi.Name, err)
	}
	return nil
}

// Has reports whether addr is on ifi.
func Has(ifi *net.Interface, addr netip.Addr) (bool, error) {
	link, err := netlink.LinkByIndex(ifi.Index)
	if err != nil {
		return false, fmt.Errorf("link %s: %w", ifi.Name, err)
	}
	fam := netlink.FAMILY_V4
	if addr.Unmap().Is6() {
		fam = netlink.FAMILY_V6
	}
	list, err := netlink.AddrList(link, fam)
	if err != nil {
		return false, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
	}
	for _, a := range list {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == addr.Unmap() {
			return true, nil
		}
	}
	return false, nil
}

// Announce tells ifi's network that addr is at ifi's hardware address:
// count gratuitous ARP requests (IPv4) or unsolicited, overriding neighbor
// advertisements to all nodes (IPv6), gap apart.
func Announce(ifi *net.Interface, addr netip.Addr, count int, gap time.Duration) error {
	addr = addr.Unmap()
	send := announceARP
	if addr.Is6() {
		send = announceNDP
	}
	for i := range count {
		if i > 0 {
			time.Sleep(gap)
		}
		if err := send(ifi, addr); err != nil {
			return fmt.Errorf("announce %s on %s (%s): %w", addr, ifi.Name, Method(addr), err)
		}
	}
	return nil
}

// announceARP sends one gratuitous ARP request: sender and target are the
// VIP, to the broadcast address.
func announceARP(ifi *net.Interface, addr netip.Addr) error {
	c, err := arp.Dial(ifi)
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, addr, ethernet.Broadcast, addr)
	if err != nil {
		return err
	}
	return c.WriteTo(p, ethernet.Broadcast)
}

// announceNDP sends one unsolicited neighbor advertisement with the
// override flag and the interface's link-layer address, to ff02::1.
func announceNDP(ifi *net.Interface, addr netip.Addr) error {
	c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return err
	}
	defer c.Close()
	na := &ndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: addr,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: ifi.HardwareAddr}},
	}
	return c.WriteTo(na, nil, netip.IPv6LinkLocalAllNodes())
}
