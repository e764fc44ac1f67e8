package host

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestPickAcrossHosts checks the decision Allocate makes from what every
// reachable host knows, merged (seen): the owner keeps its address and
// id, a new owner gets an address and id no host has, sharers share
// both, and bad requests fail naming the field.
func TestPickAcrossHosts(t *testing.T) {
	pool := netip.MustParsePrefix("10.0.0.0/29") // .1-.6
	claims := func(kv ...string) map[string]claimants {
		out := map[string]claimants{}
		for i := 0; i < len(kv); i += 2 {
			owner, share, _ := strings.Cut(kv[i+1], " ")
			out[kv[i]] = append(out[kv[i]], claimant{owner, share})
		}
		return out
	}
	req := func(owner, share, addr string) Request {
		return Request{Owner: owner, Share: share, Pool: pool, Address: addr, Interface: "eth0", VRIDRange: [2]int{10, 12}}
	}
	for _, tc := range []struct {
		name  string
		req   Request
		s     seen
		want  Allocation // Address "*": any address no host claims
		field string     // the error's field ("" = no error)
	}{
		{"owner keeps its address and id", req("c_a", "", ""),
			seen{claims: claims("10.0.0.5", "c_a", "10.0.0.2", "c_b"), ids: map[int]string{10: "c_b"}, ownID: 11},
			Allocation{"10.0.0.5", 11}, ""},
		{"owner keeps its id outside a narrowed range", req("c_a", "", ""),
			seen{claims: claims("10.0.0.5", "c_a"), ids: map[int]string{}, ownID: 50},
			Allocation{"10.0.0.5", 50}, ""},
		{"new owner: an address and the lowest id no host has", req("c_n", "", ""),
			seen{claims: claims("10.0.0.1", "c_a", "10.0.0.2", "c_b"), ids: map[int]string{10: "c_a", 11: "c_b"}},
			Allocation{"*", 12}, ""},
		{"a sharer gets the share's address and id", req("c_n", "tok", ""),
			seen{claims: claims("10.0.0.3", "c_a tok"), ids: map[int]string{10: "c_x"}, ownID: 11},
			Allocation{"10.0.0.3", 11}, ""},
		{"requested address free", req("c_n", "", "10.0.0.4"),
			seen{claims: claims("10.0.0.1", "c_a"), ids: map[int]string{}},
			Allocation{"10.0.0.4", 10}, ""},
		{"requested address held by another", req("c_n", "", "10.0.0.1"),
			seen{claims: claims("10.0.0.1", "c_a"), ids: map[int]string{}}, Allocation{}, "address"},
		{"requested address a host's own", req("c_n", "", "10.0.0.1"),
			seen{claims: claims(), reserved: map[string]string{"10.0.0.1": "the address of lb-a itself"}, ids: map[int]string{}}, Allocation{}, "address"},
		{"pool exhausted", req("c_n", "", ""),
			seen{claims: claims("10.0.0.1", "x", "10.0.0.2", "x", "10.0.0.3", "x", "10.0.0.4", "x", "10.0.0.5", "x", "10.0.0.6", "x"), ids: map[int]string{}}, Allocation{}, "pool"},
		{"ids exhausted", req("c_n", "", ""),
			seen{claims: claims(), ids: map[int]string{10: "a", 11: "b", 12: "c"}}, Allocation{}, "virtual_router_id_range"},
		{"an own id another owner took is not kept", req("c_a", "", ""),
			seen{claims: claims("10.0.0.5", "c_a"), ids: map[int]string{10: "c_b", 11: "c_c"}, ownID: 10},
			Allocation{"10.0.0.5", 12}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.s.reserved == nil {
				tc.s.reserved = map[string]string{}
			}
			got, err := tc.s.pick(tc.req)
			var fe *FieldError
			switch {
			case tc.field != "":
				if !errors.As(err, &fe) || fe.Field != tc.field {
					t.Fatalf("pick = %v, %v; want an error naming %s", got, err, tc.field)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got.VirtualRouterID != tc.want.VirtualRouterID {
				t.Errorf("id %d, want %d", got.VirtualRouterID, tc.want.VirtualRouterID)
			}
			if tc.want.Address == "*" {
				if _, taken := tc.s.claims[got.Address]; taken || !pool.Contains(netip.MustParseAddr(got.Address)) {
					t.Errorf("address %s, want one of %s no host claims", got.Address, pool)
				}
			} else if got.Address != tc.want.Address {
				t.Errorf("address %s, want %s", got.Address, tc.want.Address)
			}
		})
	}
}

// TestVRRPIDsOf checks which ids a host says are used: keepalived
// instances first, then reservations (vrrp-ids/<interface>.<id>), only
// on the interface asked about.
func TestVRRPIDsOf(t *testing.T) {
	h := fileHost(t, map[string]string{
		"keepalived/c_a.conf": "",
		"vrrp-ids/eth0.12":    "c_b\n",
		"vrrp-ids/eth1.13":    "c_c\n",
		"vrrp-ids/eth0.x":     "c_d\n",
		"vrrp-ids/eth0.14":    "not an owner!\n",
	})
	ids, err := h.vrrpIDs(t.Context(), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[12] != "c_b" {
		t.Errorf("ids %v, want only 12 (c_b)", ids)
	}
}
