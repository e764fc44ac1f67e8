package frr

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// adminBase is a router's own configuration, as its admin wrote it.
const adminBase = `frr defaults datacenter
hostname tor
! admin-marker: the admin's comment
ip prefix-list admin-marker seq 5 permit 203.0.113.0/24
!
router bgp 64512
 bgp router-id 10.77.0.1
 neighbor 10.77.9.9 remote-as 65001
 neighbor 10.77.9.9 description upstream
 address-family ipv4 unicast
  neighbor 10.77.9.9 activate
 exit-address-family
exit
!
`

func goodRouter() Router {
	return Router{
		ASN:      64512,
		Networks: []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24"), netip.MustParsePrefix("fd77::/64")},
		Neighbors: []Peer{
			{Name: "lb-a", Address: netip.MustParseAddr("10.77.0.2"), ASN: 64513, Keepalive: time.Second, Hold: 3 * time.Second, BFDProfile: "fast", Password: "s3cr3t!"},
			{Name: "lb-b", Address: netip.MustParseAddr("10.77.0.3"), ASN: 64513, BFDProfile: "fast", Password: "s3cr3t!"},
			{Name: "lb-a6", Address: netip.MustParseAddr("fd77::2"), ASN: 64513},
		},
		BFDProfiles: []BFDProfile{{Name: "fast", ReceiveInterval: 100 * time.Millisecond, TransmitInterval: 100 * time.Millisecond, DetectMultiplier: 3}},
		Prefixes:    []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24"), netip.MustParsePrefix("fd99::/112")},
	}
}

func TestRenderRouterGolden(t *testing.T) {
	got, err := RenderRouter(adminBase, goodRouter())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "router.conf")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("RenderRouter differs from %s (go test ./lbhost/frr -update):\n%s", golden, got)
	}
	if !strings.HasPrefix(got, adminBase) {
		t.Fatal("the admin's lines changed")
	}
}

// TestRouterBaseKeepsTheAdminsLines: the admin's part comes back byte for
// byte, from tfccm's section and from the same objects merged into the
// admin's blocks (a `write memory`), and a second render is the same file.
func TestRouterBaseKeepsTheAdminsLines(t *testing.T) {
	file, err := RenderRouter(adminBase, goodRouter())
	if err != nil {
		t.Fatal(err)
	}
	if got := RouterBase(file); got != adminBase {
		t.Fatalf("RouterBase of a rendered file:\n%s", got)
	}
	again, err := RenderRouter(RouterBase(file), goodRouter())
	if err != nil || again != file {
		t.Fatalf("a second render differs (%v):\n%s", err, again)
	}
	// As vtysh's write memory merges it: the objects without the markers.
	merged := strings.ReplaceAll(strings.ReplaceAll(file, sectionBegin, "!"), sectionEnd, "!")
	base := RouterBase(merged)
	if strings.Contains(base, RouterPrefix) || strings.Contains(base, "10.77.0.2") || !strings.Contains(base, "admin-marker") || !strings.Contains(base, "neighbor 10.77.9.9 description upstream") {
		t.Fatalf("RouterBase of the merged file:\n%s", base)
	}
}

func TestRenderRouterNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		change     func(*Router)
		field      string
	}{
		{"no router bgp of the admin", "frr defaults datacenter\n", func(*Router) {}, "asn"},
		{"another AS", adminBase, func(r *Router) { r.ASN = 64600 }, "asn"},
		{"AS clash", adminBase, func(r *Router) { r.Neighbors[1].ASN = 64512 }, "neighbors[1].asn"},
		{"off the networks", adminBase, func(r *Router) { r.Neighbors[0].Address = netip.MustParseAddr("192.0.2.1") }, "neighbors[0].address"},
		{"unknown profile", adminBase, func(r *Router) { r.Neighbors[0].BFDProfile = "slow" }, "neighbors[0].bfd_profile"},
		{"no prefixes", adminBase, func(r *Router) { r.Prefixes = nil }, "prefixes"},
		{"no neighbours", adminBase, func(r *Router) { r.Neighbors = nil }, "neighbors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := goodRouter()
			tc.change(&r)
			_, err := RenderRouter(tc.base, r)
			var fe *Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
		})
	}
}

func TestRenderRouterKeepsTheAdminsMaximumPaths(t *testing.T) {
	base := strings.Replace(adminBase, "  neighbor 10.77.9.9 activate\n", "  neighbor 10.77.9.9 activate\n  maximum-paths 4\n", 1)
	got, err := RenderRouter(base, goodRouter())
	if err != nil {
		t.Fatal(err)
	}
	sec := RouterSection(got)
	if strings.Contains(sec, "maximum-paths 3") || !strings.Contains(sec, "  maximum-paths 2\n") {
		t.Fatalf("section with the admin's IPv4 maximum-paths:\n%s", sec)
	}
}

func TestRenderRouterLoadsInFRR(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Debian's vtysh (make tools)")
	}
	s, err := RenderRouter(adminBase, goodRouter())
	if err != nil {
		t.Fatal(err)
	}
	if err := dryRun(t, s); err != nil {
		t.Fatal(err)
	}
	if err := dryRun(t, strings.Replace(s, "  maximum-paths", "  maximum-pathz", 1)); err == nil {
		t.Fatal("vtysh -C took an unknown command")
	}
}
