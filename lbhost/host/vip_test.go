package host

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAllocate(t *testing.T) {
	pool := netip.MustParsePrefix("10.0.0.0/29") // hosts .1-.6
	for _, tc := range []struct {
		name   string
		claims map[string]string
		owner  string
		want   string // "" = exhausted; "*" = any free host address
	}{
		{"own claim wins", map[string]string{"10.0.0.5": "a", "10.0.0.2": "b"}, "a", "10.0.0.5"},
		{"lowest of several own claims", map[string]string{"10.0.0.5": "a", "10.0.0.3": "a"}, "a", "10.0.0.3"},
		{"own claim outside the pool ignored", map[string]string{"10.9.0.5": "a"}, "a", "*"},
		{"free address", map[string]string{}, "a", "*"},
		{"only one left", map[string]string{"10.0.0.1": "x", "10.0.0.2": "x", "10.0.0.3": "x", "10.0.0.4": "x", "10.0.0.6": "x"}, "a", "10.0.0.5"},
		{"exhausted", map[string]string{"10.0.0.1": "x", "10.0.0.2": "x", "10.0.0.3": "x", "10.0.0.4": "x", "10.0.0.5": "x", "10.0.0.6": "x"}, "a", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := allocate(pool, tc.owner, tc.claims)
			switch tc.want {
			case "*":
				a, err := netip.ParseAddr(got)
				if err != nil || !pool.Contains(a) || a == pool.Addr() || a == LastAddr(pool) || tc.claims[got] != "" {
					t.Fatalf("allocate = %q, want a free host address of %s", got, pool)
				}
			default:
				if got != tc.want {
					t.Fatalf("allocate = %q, want %q", got, tc.want)
				}
			}
		})
	}
	// Deterministic: the same owner probes from the same address.
	if a, b := allocate(netip.MustParsePrefix("10.0.0.0/24"), "x_y", nil), allocate(netip.MustParsePrefix("10.0.0.0/24"), "x_y", nil); a != b {
		t.Errorf("allocate not deterministic: %s, %s", a, b)
	}
}

func TestAllocateIPv6(t *testing.T) {
	small := netip.MustParsePrefix("fd00:5::/126") // ::1-::3
	for _, tc := range []struct {
		name   string
		pool   netip.Prefix
		claims map[string]string
		want   string // "" = exhausted; "*" = any free address
	}{
		{"own claim wins", small, map[string]string{"fd00:5::2": "c1_web", "fd00:5::1": "x"}, "fd00:5::2"},
		{"only one left", small, map[string]string{"fd00:5::1": "x", "fd00:5::3": "x"}, "fd00:5::2"},
		{"last address usable (no broadcast in IPv6)", small, map[string]string{"fd00:5::1": "x", "fd00:5::2": "x"}, "fd00:5::3"},
		{"exhausted", small, map[string]string{"fd00:5::1": "x", "fd00:5::2": "x", "fd00:5::3": "x"}, ""},
		{"a /64 is probed, not walked", netip.MustParsePrefix("fd00:5::/64"), nil, "*"},
		{"a /48", netip.MustParsePrefix("fd00:5::/48"), nil, "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := allocate(tc.pool, "c1_web", tc.claims)
			if tc.want != "*" {
				if got != tc.want {
					t.Fatalf("allocate = %q, want %q", got, tc.want)
				}
				return
			}
			a, err := netip.ParseAddr(got)
			if err != nil || !tc.pool.Contains(a) || a == tc.pool.Addr() {
				t.Fatalf("allocate = %q, want an address of %s", got, tc.pool)
			}
			if low := tc.pool.Addr().As16(); a.As16()[13] != low[13] {
				t.Errorf("allocate = %s: beyond the first %d addresses of %s", a, maxIPv6Probe, tc.pool)
			}
		})
	}
}

func TestCheckPool(t *testing.T) {
	for pool, ok := range map[string]bool{
		"10.252.0.0/24": true, "10.252.0.0/30": true, "10.252.0.0/31": false, "10.252.0.1/24": false,
		"fd00:5::/64": true, "fd00:5::/126": true, "fd00:5::/127": false, "fd00:5::1/64": false, "::ffff:10.0.0.0/120": false,
	} {
		err := CheckPool(netip.MustParsePrefix(pool))
		var fe *FieldError
		if ok != (err == nil) || (err != nil && (!errors.As(err, &fe) || fe.Field != "pool")) {
			t.Errorf("CheckPool(%s) = %v, want ok=%v (and a field error on pool)", pool, err, ok)
		}
	}
}

func TestCheckInPool(t *testing.T) {
	pool := netip.MustParsePrefix("10.252.0.0/24")
	for addr, ok := range map[string]bool{
		"10.252.0.7": true, "10.252.1.7": false, "10.252.0.0": false, "10.252.0.255": false, "fd00::1": false, "10.252.0.07": false,
	} {
		err := CheckInPool(pool, addr)
		var fe *FieldError
		if ok != (err == nil) || (err != nil && (!errors.As(err, &fe) || fe.Field != "address")) {
			t.Errorf("CheckInPool(%s) = %v, want ok=%v (and a field error on address)", addr, err, ok)
		}
	}
	pool6 := netip.MustParsePrefix("fd00:5::/64")
	for addr, ok := range map[string]bool{
		"fd00:5::7": true, "fd00:5::ffff:ffff:ffff:ffff": true, "fd00:5::": false, "fd00:6::7": false,
		"FD00:5::7": false, "fd00:5::7%eth0": false, "10.252.0.7": false,
	} {
		if err := CheckInPool(pool6, addr); ok != (err == nil) {
			t.Errorf("CheckInPool(%s, %s) = %v, want ok=%v", pool6, addr, err, ok)
		}
	}
}

func TestClaimants(t *testing.T) {
	cs := parseClaimants([]byte("c1_web share=s1\nc1_api share=s1\n"))
	for _, tc := range []struct {
		owner, share string
		want         bool
	}{
		{"c1_dns", "s1", true}, {"c1_dns", "s2", false}, {"c1_dns", "", false}, {"c1_web", "s1", true},
	} {
		if got := cs.admits(tc.owner, tc.share); got != tc.want {
			t.Errorf("admits(%s, %q) = %v, want %v", tc.owner, tc.share, got, tc.want)
		}
	}
	if old := parseClaimants([]byte("c1_web\n")); old.admits("c1_api", "s1") || !old.admits("c1_web", "") {
		t.Error("an earlier release's claim must admit only its owner")
	}
	if got := string(cs.with("c1_dns", "s1").without("c1_web").bytes()); got != "c1_api share=s1\nc1_dns share=s1\n" {
		t.Errorf("with/without = %q", got)
	}
	pool := netip.MustParsePrefix("10.0.0.0/29")
	claims := map[string]claimants{"10.0.0.3": cs, "10.0.0.2": parseClaimants([]byte("c1_x\n"))}
	if got := allocateShared(pool, "c1_dns", "s1", claims, nil); got != "10.0.0.3" {
		t.Errorf("a sharer is allocated %s, want the shared 10.0.0.3", got)
	}
	if got := allocateShared(pool, "c1_dns", "s2", claims, nil); got == "10.0.0.3" || got == "10.0.0.2" || got == "" {
		t.Errorf("another token is allocated %s, want a free address", got)
	}
}

// TestAllocateReserved: a reserved address (the host's own, an excluded
// one) is never allocated, not even to an owner that claimed it before
// (a pool that once covered the hosts): the owner moves to a free one.
func TestAllocateReserved(t *testing.T) {
	pool := netip.MustParsePrefix("10.0.0.0/30") // hosts .1 and .2
	for _, tc := range []struct {
		name     string
		claims   map[string]claimants
		reserved map[string]string
		want     string
	}{
		{name: "the other is reserved", reserved: map[string]string{"10.0.0.1": "own"}, want: "10.0.0.2"},
		{name: "owner's old claim reserved", claims: map[string]claimants{"10.0.0.2": {{owner: "c1_web"}}}, reserved: map[string]string{"10.0.0.2": "own"}, want: "10.0.0.1"},
		{name: "all reserved or claimed", claims: map[string]claimants{"10.0.0.2": {{owner: "c1_db"}}}, reserved: map[string]string{"10.0.0.1": "excluded"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allocateShared(pool, "c1_web", "", tc.claims, tc.reserved); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestParseOwnAddrs: a host's own addresses are those with a subnet's
// prefix; VIPs (/32, /128) are not.
func TestParseOwnAddrs(t *testing.T) {
	out := []byte(`[{"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8},{"family":"inet","local":"10.252.0.40","prefixlen":32}]},
{"ifname":"eth0","addr_info":[{"family":"inet","local":"10.252.0.2","prefixlen":24},{"family":"inet","local":"10.252.0.3","prefixlen":32},{"family":"inet6","local":"fd00:5::2","prefixlen":64},{"family":"inet6","local":"fd00:5::9","prefixlen":128}]}]`)
	got, err := parseOwnAddrs(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"127.0.0.1": "lo", "10.252.0.2": "eth0", "fd00:5::2": "eth0"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for a, ifc := range want {
		if got[a] != ifc {
			t.Errorf("%s: got %q, want %q", a, got[a], ifc)
		}
	}
	if _, err := parseOwnAddrs([]byte("Object \"-j\" is unknown")); err == nil {
		t.Error("no error for output that is not ip's JSON")
	}
}
