// The responders: one per interface and family, answering for the VIPs held there.

package announce

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
	"k8s.io/klog/v2"
)

// Method is how a family's VIP is announced, as the status and plans say.
func Method(addr netip.Addr) string {
	if addr.Unmap().Is4() {
		return "gratuitous ARP"
	}
	return "unsolicited neighbor advertisement"
}

// Speaker answers for the VIPs this node holds, on every interface.
type Speaker struct {
	mu   sync.Mutex
	resp map[respKey]*responder
}

type respKey struct {
	ifindex int
	v6      bool
}

// NewSpeaker returns a Speaker holding nothing.
func NewSpeaker() *Speaker { return &Speaker{resp: map[respKey]*responder{}} }

// Hold makes this node answer for addr on ifi and announces it (count
// times, gap apart, in the background). Holding it again is a no-op.
func (s *Speaker) Hold(ifi *net.Interface, addr netip.Addr) error {
	addr = addr.Unmap()
	k := respKey{ifi.Index, addr.Is6()}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resp[k]
	if r == nil {
		var err error
		if r, err = startResponder(ifi, addr.Is6()); err != nil {
			return fmt.Errorf("answer for %s on %s: %w", addr, ifi.Name, err)
		}
		s.resp[k] = r
	}
	if r.add(addr) {
		go r.announce(addr, 3, 300*time.Millisecond)
	} else if r.due(addr, time.Now()) {
		go r.announce(addr, 1, 0)
	}
	return nil
}

// ReannounceEvery is how often a holder announces an address it keeps
// holding again (one gratuitous ARP / unsolicited NA), when Hold is called
// for it: a neighbour whose cache another node pointed elsewhere (a node
// that held the address for a moment, its view briefly different, then
// let go: the holder itself never changed, so it announced nothing) follows
// the holder again within this time instead of until its entry expires.
const ReannounceEvery = 5 * time.Second

// Release stops answering for addr on the interface of index ifindex.
func (s *Speaker) Release(ifindex int, addr netip.Addr) {
	addr = addr.Unmap()
	k := respKey{ifindex, addr.Is6()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.resp[k]; r != nil && r.remove(addr) {
		r.close()
		delete(s.resp, k)
	}
}

// Close stops answering for everything.
func (s *Speaker) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.resp {
		r.close()
		delete(s.resp, k)
	}
}

// responder answers on one interface for one family.
type responder struct {
	ifi  *net.Interface
	mu   sync.Mutex
	vips map[netip.Addr]bool
	// announced: when each held address was last announced.
	announced map[netip.Addr]time.Time
	arp       *arp.Client
	ndp       *ndp.Conn
	done      chan struct{}
}

func startResponder(ifi *net.Interface, v6 bool) (*responder, error) {
	r := &responder{ifi: ifi, vips: map[netip.Addr]bool{}, announced: map[netip.Addr]time.Time{}, done: make(chan struct{})}
	if !v6 {
		c, err := arp.Dial(ifi)
		if err != nil {
			return nil, fmt.Errorf("ARP socket: %w", err)
		}
		r.arp = c
		go r.serveARP()
		return r, nil
	}
	c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return nil, fmt.Errorf("NDP socket: %w", err)
	}
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeNeighborSolicitation)
	if err := c.SetICMPFilter(&f); err != nil {
		c.Close()
		return nil, fmt.Errorf("NDP filter: %w", err)
	}
	r.ndp = c
	go r.serveNDP()
	return r, nil
}

// add holds addr; true when it is new.
func (r *responder) add(addr netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.vips[addr] {
		return false
	}
	r.vips[addr] = true
	r.announced[addr] = time.Now()
	if r.ndp != nil {
		if group, err := ndp.SolicitedNodeMulticast(addr); err == nil {
			if err := r.ndp.JoinGroup(group); err != nil {
				klog.ErrorS(err, "join the VIP's solicited-node group", "address", addr, "interface", r.ifi.Name)
			}
		}
	}
	return true
}

// remove releases addr; true when nothing is left.
func (r *responder) remove(addr netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.vips[addr] && r.ndp != nil {
		if group, err := ndp.SolicitedNodeMulticast(addr); err == nil {
			_ = r.ndp.LeaveGroup(group)
		}
	}
	delete(r.vips, addr)
	delete(r.announced, addr)
	return len(r.vips) == 0
}

// due: addr is held and was last announced ReannounceEvery ago or more; it
// counts as announced now.
func (r *responder) due(addr netip.Addr, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.vips[addr] || now.Sub(r.announced[addr]) < ReannounceEvery {
		return false
	}
	r.announced[addr] = now
	return true
}

func (r *responder) holds(addr netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.vips[addr]
}

func (r *responder) close() {
	close(r.done)
	if r.arp != nil {
		r.arp.Close()
	}
	if r.ndp != nil {
		r.ndp.Close()
	}
}

func (r *responder) closed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// serveARP answers ARP requests for the held VIPs.
func (r *responder) serveARP() {
	for {
		p, _, err := r.arp.Read()
		if err != nil {
			if r.closed() {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // not an ARP packet we parse
		}
		if p.Operation != arp.OperationRequest || !r.holds(p.TargetIP) {
			continue
		}
		if err := r.arp.Reply(p, r.ifi.HardwareAddr, p.TargetIP); err != nil {
			klog.V(2).InfoS("ARP reply", "address", p.TargetIP, "err", err)
		}
	}
}

// serveNDP answers neighbor solicitations for the held VIPs.
func (r *responder) serveNDP() {
	for {
		m, _, src, err := r.ndp.ReadFrom()
		if err != nil {
			if r.closed() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		ns, ok := m.(*ndp.NeighborSolicitation)
		if !ok || !r.holds(ns.TargetAddress) {
			continue
		}
		// The zone by index: a name is looked up in the namespace of
		// whichever thread runs this.
		dst, solicited := src.WithZone(r.zone()), true
		if src.IsUnspecified() { // duplicate address detection: tell everyone
			dst, solicited = netip.IPv6LinkLocalAllNodes().WithZone(r.zone()), false
		}
		if err := r.ndp.WriteTo(r.advert(ns.TargetAddress, solicited), nil, dst); err != nil {
			klog.V(2).InfoS("neighbor advertisement", "address", ns.TargetAddress, "err", err)
		}
	}
}

// zone is the interface as an IPv6 zone (its index).
func (r *responder) zone() string { return strconv.Itoa(r.ifi.Index) }

func (r *responder) advert(addr netip.Addr, solicited bool) *ndp.NeighborAdvertisement {
	return &ndp.NeighborAdvertisement{
		Solicited: solicited, Override: true, TargetAddress: addr,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: r.ifi.HardwareAddr}},
	}
}

// announce tells the network addr is here: gratuitous ARP requests
// (sender and target the VIP, to broadcast) or unsolicited overriding
// neighbor advertisements to all nodes.
func (r *responder) announce(addr netip.Addr, count int, gap time.Duration) {
	for i := range count {
		if i > 0 {
			time.Sleep(gap)
		}
		if r.closed() || !r.holds(addr) {
			return
		}
		var err error
		if r.arp != nil {
			var p *arp.Packet
			if p, err = arp.NewPacket(arp.OperationRequest, r.ifi.HardwareAddr, addr, ethernet.Broadcast, addr); err == nil {
				err = r.arp.WriteTo(p, ethernet.Broadcast)
			}
		} else {
			err = r.ndp.WriteTo(r.advert(addr, false), nil, netip.IPv6LinkLocalAllNodes().WithZone(r.zone()))
		}
		if err != nil {
			klog.ErrorS(err, "announce VIP", "address", addr, "interface", r.ifi.Name, "method", Method(addr))
		}
	}
}
