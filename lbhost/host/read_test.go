package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/router"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// readOutcome is what a read of the host means to the provider's Read:
// the object, gone (removed from state), drifted (kept, written again) or
// an error (the state unchanged).
type readOutcome int

const (
	present readOutcome = iota
	gone
	drifted
	failed
)

func (o readOutcome) String() string {
	return [...]string{"present", "gone", "drifted", "an error"}[o]
}

func outcomeOf[T any](got *T, err error) readOutcome {
	var drift *Drift
	switch {
	case errors.As(err, &drift):
		return drifted
	case err != nil:
		return failed
	case got == nil:
		return gone
	}
	return present
}

// fileHost is a host whose files are in a temporary directory (no
// commands run: only reads of files are tested with it).
func fileHost(t *testing.T, files map[string]string) *Host {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if data == "<dir>" { // a path that cannot be read as a file
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &Host{T: &transport.Netns{Name: "tfccm-none"}, Dir: dir}
}

// TestReadRoutedVIP: a routed VIP of which nothing is left is gone; its
// claim without its config, or a config without its claim, unreadable or
// of another address, is drifted (kept in state, so a destroy removes
// what is left); a file the host cannot read is an error.
func TestReadRoutedVIP(t *testing.T) {
	config := func(owner, addr string) string {
		b, err := json.Marshal(router.Config{Owner: owner, Address: addr, Nexthops: []string{"10.1.0.1"},
			Check: router.Check{Protocol: "TCP", Port: 30080, IntervalMS: 1000, Rise: 2, Fall: 2}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const addr = "10.0.0.5"
	for _, tc := range []struct {
		name  string
		files map[string]string
		addr  string // "" as for an import
		want  readOutcome
	}{
		{"present", map[string]string{"routed/c1_web.json": config("c1_web", addr), "claims/" + addr: "c1_web\n"}, addr, present},
		{"nothing left", nil, addr, gone},
		{"claimed by another", map[string]string{"claims/" + addr: "c1_api\n"}, addr, gone},
		{"claim without config", map[string]string{"claims/" + addr: "c1_web\n"}, addr, drifted},
		{"config without claim", map[string]string{"routed/c1_web.json": config("c1_web", addr)}, addr, drifted},
		{"config of another address", map[string]string{"routed/c1_web.json": config("c1_web", "10.0.0.6"), "claims/10.0.0.6": "c1_web\n"}, addr, drifted},
		{"config edited by hand", map[string]string{"routed/c1_web.json": "{", "claims/" + addr: "c1_web\n"}, addr, drifted},
		{"config of another owner", map[string]string{"routed/c1_web.json": config("c1_api", addr), "claims/" + addr: "c1_web\n"}, addr, drifted},
		{"config unreadable", map[string]string{"routed/c1_web.json": "<dir>"}, addr, failed},
		{"claim unreadable", map[string]string{"routed/c1_web.json": config("c1_web", addr), "claims/" + addr: "<dir>"}, addr, failed},
		{"import: no config", map[string]string{"claims/" + addr: "c1_web\n"}, "", gone},
		{"import: present", map[string]string{"routed/c1_web.json": config("c1_web", addr), "claims/" + addr: "c1_web\n"}, "", present},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fileHost(t, tc.files)
			got, err := h.ReadRoutedVIP(context.Background(), "c1_web", tc.addr)
			if o := outcomeOf(got, err); o != tc.want {
				t.Fatalf("ReadRoutedVIP = %v, %v: %s, want %s", got, err, o, tc.want)
			}
			if tc.want == present && (got.Owner != "c1_web" || got.Address != addr) {
				t.Errorf("ReadRoutedVIP = %+v, want c1_web's config of %s", got, addr)
			}
		})
	}
}

// TestReadVRRPVIP: a VIP held by a VRRP instance is present with its
// claim and instance; with only one of them it is drifted (the instance
// of an address no one claims is left by a destroy that failed half-way),
// and gone when nothing of it is left or the address is someone else's.
func TestReadVRRPVIP(t *testing.T) {
	const addr, iface = "10.0.0.5", "eth1"
	instance := func(owner, addr string) string {
		b, err := keepalived.Render(keepalived.Instance{Owner: owner, Interface: iface, VirtualRouterID: 42, Priority: 100, AdvertInt: 1,
			NoPreempt: true, Address: addr, AddressInterface: iface})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name  string
		share string
		files map[string]string
		want  readOutcome
	}{
		{"present", "", map[string]string{"claims/" + addr: "c1_web\n", "keepalived/c1_web.conf": instance("c1_web", addr)}, present},
		{"shared", "s1", map[string]string{"claims/" + addr: "c1_api share=s1\nc1_web share=s1\n", "keepalived/share.s1.conf": instance("share.s1", addr)}, present},
		{"nothing left", "", nil, gone},
		{"another's address", "", map[string]string{"claims/" + addr: "c1_api\n", "keepalived/c1_web.conf": instance("c1_web", addr)}, gone},
		{"another sharer's instance", "s1", map[string]string{"claims/" + addr: "c1_api share=s1\n", "keepalived/share.s1.conf": instance("share.s1", addr)}, gone},
		{"claim without instance", "", map[string]string{"claims/" + addr: "c1_web\n"}, drifted},
		{"claim with another address's instance", "", map[string]string{"claims/" + addr: "c1_web\n", "keepalived/c1_web.conf": instance("c1_web", "10.0.0.6")}, drifted},
		{"instance without claim", "", map[string]string{"keepalived/c1_web.conf": instance("c1_web", addr)}, drifted},
		{"instance edited by hand", "", map[string]string{"claims/" + addr: "c1_web\n", "keepalived/c1_web.conf": "vrrp_instance {"}, drifted},
		{"claim unreadable", "", map[string]string{"claims/" + addr: "<dir>", "keepalived/c1_web.conf": instance("c1_web", addr)}, failed},
		{"instance unreadable", "", map[string]string{"claims/" + addr: "c1_web\n", "keepalived/c1_web.conf": "<dir>"}, failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fileHost(t, tc.files)
			got, err := h.ReadVIP(context.Background(), "c1_web", tc.share, addr, iface, true)
			if o := outcomeOf(got, err); o != tc.want {
				t.Fatalf("ReadVIP = %v, %v: %s, want %s", got, err, o, tc.want)
			}
			if tc.want == present && (got.VRRP == nil || got.VRRP.Address != addr) {
				t.Errorf("ReadVIP = %+v, want the instance holding %s", got, addr)
			}
		})
	}
}
