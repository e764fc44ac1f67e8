package provider

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/workspace"
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
			got, err := ingressStatus(map[string]json.RawMessage{"ingress": json.RawMessage(tc.ingress)})
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
	if _, err := ingressStatus(map[string]json.RawMessage{}); err == nil {
		t.Error("missing ingress output accepted")
	}
}

func TestResultEvent(t *testing.T) {
	fail := errors.New("Error: Resource precondition failed: UDP is not supported")
	cases := []struct {
		r                    workspace.Result
		wantType, wantReason string
		wantIn               string
	}{
		{workspace.Result{Op: "apply", Changed: true, Duration: time.Second}, corev1.EventTypeNormal, ReasonApplied, "plan applied"},
		{workspace.Result{Op: "plan"}, corev1.EventTypeNormal, ReasonApplied, "no changes"},
		{workspace.Result{Op: "plan", Err: fail, Attempt: 2}, corev1.EventTypeWarning, ReasonApplyFailed, "UDP is not supported"},
		{workspace.Result{Op: "destroy"}, corev1.EventTypeNormal, ReasonDestroyed, "state removed"},
		{workspace.Result{Op: "destroy", Err: fail}, corev1.EventTypeWarning, ReasonDestroyFailed, "tofu destroy failed"},
		{workspace.Result{Op: "plan", Err: workspace.ErrLocked, LockHolder: "alice@laptop"}, corev1.EventTypeWarning, ReasonStateLocked, "alice@laptop"},
		{workspace.Result{Op: "apply", Drift: true, Changed: true}, corev1.EventTypeWarning, ReasonDriftRepaired, "drifted"},
		{workspace.Result{Op: "plan", Drift: true, Err: fail}, corev1.EventTypeWarning, ReasonDriftFailed, "UDP is not supported"},
	}
	for _, tc := range cases {
		typ, reason, msg := resultEvent(tc.r)
		if typ != tc.wantType || reason != tc.wantReason || !strings.Contains(msg, tc.wantIn) {
			t.Errorf("resultEvent(%+v) = %s %s %q; want %s %s containing %q", tc.r, typ, reason, msg, tc.wantType, tc.wantReason, tc.wantIn)
		}
	}
}
