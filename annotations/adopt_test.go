package annotations

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseAdopt: a bare id or a JSON object of strings with "id"; ids
// and part names of a safe shape only, so no value carries HCL, a space or
// a quote.
func TestParseAdopt(t *testing.T) {
	tests := []struct {
		in      string
		want    Adoption
		wantErr string
	}{
		{in: "4711", want: Adoption{ID: "4711"}},
		{in: " ocid1.networkloadbalancer.oc1.eu-frankfurt-1.aaaa ", want: Adoption{ID: "ocid1.networkloadbalancer.oc1.eu-frankfurt-1.aaaa"}},
		{in: `{"id": "5c1d", "listener.tcp-80": "9a2b"}`, want: Adoption{ID: "5c1d", Parts: map[string]string{"listener.tcp-80": "9a2b"}}},
		{in: "", wantErr: "is not a load balancer id"},
		{in: "a b", wantErr: "is not a load balancer id"},
		{in: `${var.x}`, wantErr: "is not a load balancer id"},
		{in: `{"id": "1", "x": "${y}"}`, wantErr: `part x: "${y}" is not an id`},
		{in: `{"id": "1"} trailing`, wantErr: "not a JSON object of strings"},
		{in: `{"name.80-ipv4": "TCP-80"}`, wantErr: `has no "id"`},
		{in: `{"id": "1", "A": "2"}`, wantErr: `part name "A" is not a part name`},
	}
	for _, tt := range tests {
		got, err := Adopt.Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	if ids := (Adoption{ID: "1", Parts: map[string]string{"pool.b": "3", "listener.a": "2"}}).IDs(); !reflect.DeepEqual(ids, []string{"1", "2", "3"}) {
		t.Errorf("IDs %v", ids)
	}
}
