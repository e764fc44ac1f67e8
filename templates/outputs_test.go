package templates

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestIngressStatus(t *testing.T) {
	vip := corev1.LoadBalancerIPModeVIP
	proxy := corev1.LoadBalancerIPModeProxy
	cases := []struct {
		name    string
		ingress string
		want    []corev1.LoadBalancerIngress
		wantErr string
	}{
		{"ip with mode", `[{"ip":"10.0.0.5","hostname":null,"ip_mode":"VIP"}]`, []corev1.LoadBalancerIngress{{IP: "10.0.0.5", IPMode: &vip}}, ""},
		{"hostname only", `[{"hostname":"lb.example.com"}]`, []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}, ""},
		{"dual stack proxy", `[{"ip":"10.0.0.5","ip_mode":"Proxy"},{"ip":"fd00::5","ip_mode":"Proxy"}]`, []corev1.LoadBalancerIngress{{IP: "10.0.0.5", IPMode: &proxy}, {IP: "fd00::5", IPMode: &proxy}}, ""},
		{"empty list", `[]`, nil, ""},
		{"bad ip", `[{"ip":"10.0.0.500"}]`, nil, "ingress[0].ip` \"10.0.0.500\" is not an IP address"},
		{"nothing", `[{"ip":null,"hostname":null}]`, nil, "neither ip nor hostname"},
		{"bad mode", `[{"ip":"10.0.0.5","ip_mode":"Magic"}]`, nil, "must be VIP or Proxy"},
		{"not a list", `"10.0.0.5"`, nil, "not a list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IngressStatus(map[string]json.RawMessage{"ingress": json.RawMessage(tc.ingress)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Ingress) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got.Ingress, tc.want)
			}
			for i := range tc.want {
				g, w := got.Ingress[i], tc.want[i]
				if g.IP != w.IP || g.Hostname != w.Hostname || (g.IPMode == nil) != (w.IPMode == nil) || (g.IPMode != nil && *g.IPMode != *w.IPMode) {
					t.Errorf("ingress[%d] = %+v, want %+v", i, g, w)
				}
			}
		})
	}
	if _, err := IngressStatus(map[string]json.RawMessage{}); err == nil {
		t.Error("missing ingress output accepted")
	}
}
