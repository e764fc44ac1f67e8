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
	for name, in := range map[string]Instance{"full": full, "minimal": minimal} {
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

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
