package host

import (
	"context"
	"errors"
	"testing"
)

// TestParseAddrs: `ip -j addr show` becomes "<interface> <address>" for
// every address of every link, both families.
func TestParseAddrs(t *testing.T) {
	out := `[{"ifindex":1,"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
{"ifindex":2,"ifname":"eth0","addr_info":[{"family":"inet","local":"10.0.0.2","prefixlen":24},{"family":"inet","local":"10.0.0.10","prefixlen":32},{"family":"inet6","local":"fd00::10","prefixlen":128}]},
{"ifindex":3,"ifname":"eth1","addr_info":[]}]`
	on, err := parseAddrs([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"lo 127.0.0.1", "eth0 10.0.0.2", "eth0 10.0.0.10", "eth0 fd00::10"} {
		if !on[k] {
			t.Errorf("%q missing from %v", k, on)
		}
	}
	if on["eth1 10.0.0.10"] || len(on) != 4 {
		t.Errorf("parsed %v", on)
	}
	if _, err := parseAddrs([]byte("not json")); err == nil {
		t.Error("bad output accepted")
	}
}

// TestReadHealthRefusesUnknownReads: a read ReadHealth does not know is a
// field error before anything runs on the host.
func TestReadHealthRefusesUnknownReads(t *testing.T) {
	_, err := (&Host{}).ReadHealth(context.Background(), []string{ReadHAProxy, "ipvs"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "reads" {
		t.Fatalf("err %v, want a FieldError on reads", err)
	}
}
