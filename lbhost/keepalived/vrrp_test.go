package keepalived

import (
	"reflect"
	"strings"
	"testing"
)

func TestRenderParse(t *testing.T) {
	full := Instance{Owner: "c1_web", Address: "192.0.2.10", AddressInterface: "eth0", Interface: "eth1",
		VirtualRouterID: 51, Priority: 150, AdvertInt: 1, NoPreempt: true, SourceAddress: "10.0.0.1",
		Peers: []string{"10.0.0.2", "10.0.0.3"}}
	minimal := Instance{Owner: "c1_web", Address: "192.0.2.10", AddressInterface: "eth0", Interface: "eth0",
		VirtualRouterID: 1, Priority: 100, AdvertInt: 1}
	v6 := Instance{Owner: "c1_web", Address: "fd00:5::7", AddressInterface: "eth0", Interface: "eth1",
		VirtualRouterID: 51, Priority: 150, AdvertInt: 1, NoPreempt: true, SourceAddress: "fd00::1",
		Peers: []string{"fd00::2"}}
	v6multicast := minimal
	v6multicast.Address = "fd00:5::7"
	for name, in := range map[string]Instance{"full": full, "minimal": minimal, "ipv6": v6, "ipv6 multicast": v6multicast} {
		t.Run(name, func(t *testing.T) {
			data, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, in) {
				t.Errorf("round trip: got %+v want %+v", got, in)
			}
		})
	}
	data, _ := Render(full)
	for _, want := range []string{"state BACKUP\n", "nopreempt\n", "unicast_peer {\n        10.0.0.2\n        10.0.0.3\n    }", "192.0.2.10/32 dev eth0", "advert_int 1\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("fragment lacks %q:\n%s", want, data)
		}
	}
}

func TestValidateNamesField(t *testing.T) {
	ok := Instance{Owner: "o", Address: "192.0.2.10", AddressInterface: "eth0", Interface: "eth0", VirtualRouterID: 1, Priority: 100, AdvertInt: 1}
	for field, edit := range map[string]func(*Instance){
		"vrrp.virtual_router_id": func(i *Instance) { i.VirtualRouterID = 256 },
		"vrrp.priority":          func(i *Instance) { i.Priority = 255 },
		"vrrp.peers[0]":          func(i *Instance) { i.Peers = []string{"10.0.0.2 }\nvrrp_script x {"} },
		"vrrp.interface":         func(i *Instance) { i.Interface = "eth0; reboot" },
		"vrrp.source_address":    func(i *Instance) { i.SourceAddress = "10.0.0.1" }, // without peers
	} {
		in := ok
		edit(&in)
		if _, err := Render(in); err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: error %v", field, err)
		}
	}
	if _, err := Parse([]byte(strings.Replace(string(must(Render(ok))), "state BACKUP", "state MASTER", 1))); err == nil {
		t.Error("Parse accepted an edited fragment")
	}
}

// An IPv6 VIP makes an IPv6 (VRRPv3) instance: keepalived sends its adverts
// from and to IPv6 addresses only, so IPv4 peers are refused here, not by
// keepalived's config check on the host.
func TestValidateFamilies(t *testing.T) {
	base := Instance{Owner: "o", AddressInterface: "eth0", Interface: "eth0", VirtualRouterID: 1, Priority: 100, AdvertInt: 1}
	for _, tc := range []struct {
		name, addr, src string
		peers           []string
		field           string // "" = valid
	}{
		{"v4 unicast", "192.0.2.10", "10.0.0.1", []string{"10.0.0.2"}, ""},
		{"v6 unicast", "fd00:5::7", "fd00::1", []string{"fd00::2"}, ""},
		{"v6 multicast", "fd00:5::7", "", nil, ""},
		{"v6 vip, v4 peers", "fd00:5::7", "", []string{"10.0.0.2"}, "vrrp.peers[0]"},
		{"v6 vip, v4 source", "fd00:5::7", "10.0.0.1", []string{"fd00::2"}, "vrrp.source_address"},
		{"v4 vip, v6 peers", "192.0.2.10", "", []string{"fd00::2"}, "vrrp.peers[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.Address, in.SourceAddress, in.Peers = tc.addr, tc.src, tc.peers
			_, err := Render(in)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Render: %v", err)
			case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field+":")):
				t.Fatalf("Render error = %v, want one for %s", err, tc.field)
			}
		})
	}
	if data := must(Render(Instance{Owner: "o", Address: "fd00:5::7", AddressInterface: "eth0", Interface: "eth0", VirtualRouterID: 1, Priority: 100, AdvertInt: 1})); !strings.Contains(string(data), "fd00:5::7/128 dev eth0") {
		t.Errorf("IPv6 VIP not a /128:\n%s", data)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
