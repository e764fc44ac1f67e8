// Instance, one VIP's VRRP instance: rendered, validated and parsed back.

package keepalived

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// ErrSourceWithoutPeers: keepalived's configuration check rejects
// unicast_src_ip in an instance without unicast peers (it would fall back to
// multicast), so a host without peers (the only one of its group) must not
// set a source address.
var ErrSourceWithoutPeers = errors.New("set without vrrp.peers: a unicast source needs at least one unicast peer (keepalived rejects it alone); leave it unset on a host with no peers")

// Instance is one VRRP instance holding one VIP.
type Instance struct {
	// Owner names the instance (lbhost_<owner>) and the fragment file.
	Owner string
	// Name, when set, is the instance's name instead of lbhost_<owner>:
	// an adopted hand-made instance keeps its name, so keepalived's
	// reload carries its state (MASTER stays MASTER, the VIP stays up).
	Name    string
	Address string
	// AddressBits is the prefix length the address is configured with (0:
	// a host prefix, /32 or /128). An adopted hand-made instance keeps its
	// own (a VIP configured as /24 stays /24: no address change, and the
	// host's on-link route stays).
	AddressBits int
	// AddressInterface is where keepalived configures the address.
	AddressInterface string
	// Interface carries the VRRP adverts.
	Interface       string
	VirtualRouterID int
	Priority        int
	AdvertInt       int
	NoPreempt       bool
	// SourceAddress is unicast_src_ip ("" = the interface's primary).
	SourceAddress string
	// Peers are the other hosts' addresses (unicast VRRP).
	Peers []string
}

const header = "# managed by terraform-provider-lbhost: vip "

var (
	reOwner = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,99}$`)
	reIface = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$`)
)

func ip(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.String() == s
}

// Validate checks every value Render writes; errors name the schema field.
func (in Instance) Validate() error {
	switch {
	case !reOwner.MatchString(in.Owner):
		return fmt.Errorf("owner: %q is not a valid owner", in.Owner)
	case in.Name != "" && !ValidName(in.Name):
		return fmt.Errorf("keepalived_instance: %q is not an instance name", in.Name)
	case !ip(in.Address):
		return fmt.Errorf("address: %q is not an IP address", in.Address)
	case in.AddressBits < 0 || in.AddressBits > netip.MustParseAddr(in.Address).BitLen():
		return fmt.Errorf("address: prefix length %d is not one of %s", in.AddressBits, in.Address)
	case !reIface.MatchString(in.AddressInterface):
		return fmt.Errorf("interface: %q is not an interface name", in.AddressInterface)
	case !reIface.MatchString(in.Interface):
		return fmt.Errorf("vrrp.interface: %q is not an interface name", in.Interface)
	case in.VirtualRouterID < 1 || in.VirtualRouterID > 255:
		return fmt.Errorf("vrrp.virtual_router_id: %d must be from 1 to 255", in.VirtualRouterID)
	case in.Priority < 1 || in.Priority > 254:
		return fmt.Errorf("vrrp.priority: %d must be from 1 to 254", in.Priority)
	case in.AdvertInt < 1 || in.AdvertInt > 255:
		return fmt.Errorf("vrrp.advert_int: %d must be from 1 to 255 seconds", in.AdvertInt)
	case in.SourceAddress != "" && !ip(in.SourceAddress):
		return fmt.Errorf("vrrp.source_address: %q is not an IP address", in.SourceAddress)
	case in.SourceAddress != "" && len(in.Peers) == 0:
		return fmt.Errorf("vrrp.source_address: %s", ErrSourceWithoutPeers)
	}
	// keepalived takes an instance's family from its virtual addresses
	// (an IPv6 VIP makes an IPv6 instance, which speaks VRRPv3): adverts
	// then go to and from addresses of that family only.
	six := netip.MustParseAddr(in.Address).Is6()
	if in.SourceAddress != "" && netip.MustParseAddr(in.SourceAddress).Is6() != six {
		return fmt.Errorf("vrrp.source_address: %s is not of the VIP %s's family (an IPv6 VIP's instance sends VRRPv3 adverts over IPv6)", in.SourceAddress, in.Address)
	}
	for i, p := range in.Peers {
		if !ip(p) {
			return fmt.Errorf("vrrp.peers[%d]: %q is not an IP address", i, p)
		}
		if netip.MustParseAddr(p).Is6() != six {
			return fmt.Errorf("vrrp.peers[%d]: %s is not of the VIP %s's family (an IPv6 VIP's instance sends VRRPv3 adverts over IPv6)", i, p, in.Address)
		}
	}
	return nil
}

// name is the instance's name in keepalived.
func (in Instance) name() string {
	if in.Name != "" {
		return in.Name
	}
	return "lbhost_" + in.Owner
}

// Render returns the fragment for in.
func Render(in Instance) ([]byte, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	bits := 32
	if a := netip.MustParseAddr(in.Address); a.Is6() {
		bits = 128
	}
	if in.AddressBits != 0 {
		bits = in.AddressBits
	}
	w("%s%s", header, in.Owner)
	w("vrrp_instance %s {", in.name())
	w("    state BACKUP")
	w("    interface %s", in.Interface)
	w("    virtual_router_id %d", in.VirtualRouterID)
	w("    priority %d", in.Priority)
	w("    advert_int %d", in.AdvertInt)
	if in.NoPreempt {
		w("    nopreempt")
	}
	if in.SourceAddress != "" {
		w("    unicast_src_ip %s", in.SourceAddress)
	}
	if len(in.Peers) > 0 {
		w("    unicast_peer {")
		for _, p := range in.Peers {
			w("        %s", p)
		}
		w("    }")
	}
	w("    virtual_ipaddress {")
	w("        %s/%d dev %s", in.Address, bits, in.AddressInterface)
	w("    }")
	w("}")
	return b.Bytes(), nil
}

// Parse reads a fragment written by Render back; anything else is an error.
func Parse(data []byte) (Instance, error) {
	var in Instance
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), header) {
		return in, fmt.Errorf("not a fragment written by lbhost")
	}
	in.Owner = strings.TrimPrefix(sc.Text(), header)
	block := ""
	num := func(s string) (int, error) { return strconv.Atoi(s) }
	for sc.Scan() {
		k := strings.Fields(sc.Text())
		var err error
		switch {
		case len(k) == 0:
		case block == "peers" && len(k) == 1 && k[0] != "}":
			in.Peers = append(in.Peers, k[0])
		case block == "vips" && len(k) == 3 && k[1] == "dev":
			a, bits, _ := strings.Cut(k[0], "/")
			in.Address, in.AddressInterface = a, k[2]
			if n, err := strconv.Atoi(bits); err == nil && n != netip.MustParseAddr(addrOr(a)).BitLen() {
				in.AddressBits = n
			}
		case len(k) == 1 && k[0] == "}":
			block = ""
		case len(k) == 3 && k[0] == "vrrp_instance" && k[1] == "lbhost_"+in.Owner && k[2] == "{":
		case len(k) == 3 && k[0] == "vrrp_instance" && in.Name == "" && ValidName(k[1]) && k[2] == "{":
			in.Name = k[1] // an adopted instance's own name
		case len(k) == 2 && k[0] == "state" && k[1] == "BACKUP":
		case len(k) == 2 && k[0] == "interface":
			in.Interface = k[1]
		case len(k) == 2 && k[0] == "virtual_router_id":
			in.VirtualRouterID, err = num(k[1])
		case len(k) == 2 && k[0] == "priority":
			in.Priority, err = num(k[1])
		case len(k) == 2 && k[0] == "advert_int":
			in.AdvertInt, err = num(k[1])
		case len(k) == 1 && k[0] == "nopreempt":
			in.NoPreempt = true
		case len(k) == 2 && k[0] == "unicast_src_ip":
			in.SourceAddress = k[1]
		case len(k) == 2 && k[0] == "unicast_peer" && k[1] == "{":
			block = "peers"
		case len(k) == 2 && k[0] == "virtual_ipaddress" && k[1] == "{":
			block = "vips"
		default:
			return in, fmt.Errorf("unexpected line %q", sc.Text())
		}
		if err != nil {
			return in, fmt.Errorf("line %q: %w", sc.Text(), err)
		}
	}
	if err := in.Validate(); err != nil {
		return in, fmt.Errorf("fragment holds invalid values: %w", err)
	}
	return in, nil
}

// addrOr is s, or an IPv4 address when s is not one (Validate reports it).
func addrOr(s string) string {
	if _, err := netip.ParseAddr(s); err != nil {
		return "0.0.0.0"
	}
	return s
}
