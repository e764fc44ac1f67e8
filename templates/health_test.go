package templates

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeBackends(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []BackendHealth
		err       bool
	}{
		{"two", `[{"node":"a","healthy":true},{"node":"b","healthy":false}]`, []BackendHealth{{"a", true}, {"b", false}}, false},
		{"none", `[]`, []BackendHealth{}, false},
		{"not a list", `{"node":"a"}`, nil, true},
		{"no node", `[{"healthy":true}]`, nil, true},
		{"no healthy", `[{"node":"a"}]`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeBackends(map[string]json.RawMessage{"backends": json.RawMessage(tc.raw)})
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %t", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := DecodeBackends(map[string]json.RawMessage{}); err == nil {
		t.Error("missing output accepted")
	}
}

// TestBuiltinHealth: the sets that read backend health from the load
// balancer say so (docs/templates.md lists them).
func TestBuiltinHealth(t *testing.T) {
	for _, tc := range []struct{ set, module string }{
		{"local", "loadbalancer"}, {"local", "loadbalancer.routed"}, {"baremetal", "loadbalancer"},
	} {
		s, err := LoadBuiltin(tc.set)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := s.Module(tc.module)
		if !ok || !m.HasHealth() {
			t.Errorf("%s/%s has no health module", tc.set, tc.module)
		}
	}
	s, err := LoadBuiltin("hcloud")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Module("loadbalancer"); m.HasHealth() {
		t.Error("hcloud/loadbalancer has a health module")
	}
}

func TestDecodeVIPHolders(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      map[string][]string
		err       string
	}{
		{"one holder", `{"IPv4":["lb-a"]}`, map[string][]string{"IPv4": {"lb-a"}}, ""},
		{"split brain sorted", `{"IPv4":["lb-b","lb-a"],"IPv6":[]}`, map[string][]string{"IPv4": {"lb-a", "lb-b"}, "IPv6": {}}, ""},
		{"null list", `{"IPv6":null}`, map[string][]string{"IPv6": {}}, ""},
		{"not a map", `["lb-a"]`, nil, "not a map of IP family"},
		{"bad family", `{"IPv5":[]}`, nil, `IP family "IPv5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeVIPHolders(map[string]json.RawMessage{"vip_holders": json.RawMessage(tc.raw)})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
	if got, err := DecodeVIPHolders(map[string]json.RawMessage{}); got != nil || err != nil {
		t.Errorf("no output: %v, %v, want nil, nil", got, err)
	}
}

// TestDecodeVIPHolderKind: the kinds VIPHeld has words (and a rule) for.
func TestDecodeVIPHolderKind(t *testing.T) {
	for _, tc := range []struct {
		raw     string // "" no output
		want    string
		wantErr bool
	}{
		{raw: "", want: ""},
		{raw: `"LB host"`, want: ""},
		{raw: `"node"`, want: "node"},
		{raw: `"BGP node"`, want: "BGP node"},
		{raw: `"router"`, wantErr: true},
		{raw: `7`, wantErr: true},
	} {
		outs := map[string]json.RawMessage{}
		if tc.raw != "" {
			outs["vip_holder_kind"] = json.RawMessage(tc.raw)
		}
		got, err := DecodeVIPHolderKind(outs)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: %q, %v; want %q, error %t", tc.raw, got, err, tc.want, tc.wantErr)
		}
	}
}
