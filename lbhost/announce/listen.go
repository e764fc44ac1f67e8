// Whether a frontend listens: the kernel's TCP socket tables.

package announce

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Listeners returns the local addresses:ports in LISTEN state of the
// host's /proc/net/tcp and /proc/net/tcp6.
func Listeners() (map[netip.AddrPort]bool, error) {
	out := map[netip.AddrPort]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		r, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue // no IPv6
			}
			return nil, err
		}
		err = parseListeners(r, out)
		r.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseListeners adds the LISTEN sockets of one /proc/net/tcp{,6} table.
// Addresses are hex, in host byte order per 32-bit word (little endian
// here); ports are hex big-endian numbers.
func parseListeners(r io.Reader, out map[netip.AddrPort]bool) error {
	sc := bufio.NewScanner(r)
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		host, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		raw, err := hex.DecodeString(host)
		if err != nil || (len(raw) != 4 && len(raw) != 16) {
			continue
		}
		for i := 0; i < len(raw); i += 4 {
			binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			continue
		}
		a, _ := netip.AddrFromSlice(raw)
		out[netip.AddrPortFrom(a.Unmap(), uint16(p))] = true
	}
	return sc.Err()
}

// serves reports whether something listens on every port of c at its
// address or at the wildcard address of its family.
func serves(listening map[netip.AddrPort]bool, c Config) bool {
	a := netip.MustParseAddr(c.Address)
	wild := netip.IPv4Unspecified()
	if a.Is6() {
		wild = netip.IPv6Unspecified()
	}
	for _, p := range c.Ports {
		if !listening[netip.AddrPortFrom(a, uint16(p))] && !listening[netip.AddrPortFrom(wild, uint16(p))] {
			return false
		}
	}
	return true
}
