package localcloud

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// hostLock serializes choosing address slots and creating clouds among
// processes on this host.
const hostLock = "/run/tfccm-localcloud.lock"

func lockHost() (unlock func(), err error) {
	f, err := os.OpenFile(hostLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local cloud: lock %s: %w", hostLock, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("local cloud: lock %s: %w", hostLock, err)
	}
	return func() { f.Close() }, nil
}

// pickSlot returns the first transit /30 (10.251.k.0/30) and VIP pool
// (10.252.k.0/24) that overlap no route on the host. k = 0 gives the
// defaults of templates/CONTRACT.md. With bits below 24 the pool is a
// 10.252.m.0/bits of that size instead (a /22 for 1,000 VIPs), aligned.
func pickSlot(bits int) (transit, pool string, err error) {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return "", "", fmt.Errorf("local cloud: list host routes: %w", err)
	}
	var used []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "local" || dst == "broadcast" || dst == "unreachable" || dst == "blackhole" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if dst == "default" {
			continue
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			used = append(used, p.Masked())
		}
	}
	free := func(p netip.Prefix) bool {
		for _, u := range used {
			if u.Overlaps(p) && u.Bits() > 0 {
				return false
			}
		}
		return true
	}
	if bits <= 0 || bits > 24 {
		bits = 24
	}
	step := 1 << (24 - bits) // /24s per pool
	for k := 0; k*step < 256; k++ {
		t := netip.MustParsePrefix(fmt.Sprintf("10.251.%d.0/30", k))
		v := netip.MustParsePrefix(fmt.Sprintf("10.252.%d.0/%d", k*step, bits))
		if free(t) && free(v) {
			return t.String(), v.String(), nil
		}
	}
	return "", "", fmt.Errorf("local cloud: no free address slot in 10.251.0.0/16 and 10.252.0.0/16 on this host")
}

// poolBits is the prefix length of the smallest VIP pool, a /24 or
// larger, that holds vips addresses besides its first and last.
func poolBits(vips int) int {
	bits := 24
	for bits > 8 && 1<<(32-bits)-2 < vips {
		bits--
	}
	return bits
}
