package host

import (
	"reflect"
	"testing"
)

func TestRouteHops(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"no route", "[]\n", nil},
		{"empty output", "", nil},
		{"one hop", `[{"dst":"10.252.0.5","gateway":"10.250.0.11","dev":"br0","protocol":"77","flags":[]}]`, []string{"10.250.0.11"}},
		{"ecmp", `[{"dst":"10.252.0.5","protocol":"77","flags":[],"nexthops":[{"gateway":"10.250.0.11","dev":"br0","weight":1,"flags":[]},{"gateway":"10.250.0.13","dev":"br0","weight":1,"flags":[]}]}]`, []string{"10.250.0.11", "10.250.0.13"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := routeHops([]byte(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := routeHops([]byte("not json")); err == nil {
		t.Error("garbage parsed")
	}
}
