package provider

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// TestRefusedInputOneWarning: an input tfccm refuses is one Warning, its
// own, naming the problem: EnsureLoadBalancer and UpdateLoadBalancer answer
// the service controller's no-op, on which it records no second Warning
// and does not retry. A taken address or an exhausted pool, which another
// Service's change resolves, stays an error the controller retries.
func TestRefusedInputOneWarning(t *testing.T) {
	badAnnotation := fakeRenderer{err: errors.New("annotation tfccm.io/vars: not valid JSON")}
	for _, tc := range []struct {
		name     string
		render   renderer // nil: fakeRenderer and an address pool
		svc      *corev1.Service
		update   bool
		refused  bool // answered cloudprovider.ImplementedElsewhere
		wantWarn string
	}{
		{"render fails", badAnnotation, phaseService(), false, true, ReasonRenderFailed},
		{"render fails on a node update", badAnnotation, phaseService(), true, true, ReasonRenderFailed},
		{"address outside every pool", nil, addrService("outside", 80, "tfccm.io/load-balancer-ips", "192.0.2.1"), false, true, ReasonAddressRefused},
		{"address held by another Service", nil, addrService("thief", 80, "tfccm.io/load-balancer-ips", "10.0.0.10"), false, false, ReasonAddressConflict},
		{"pool exhausted", nil, addrService("more", 80), false, false, ReasonAddressPoolExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeLBEngine{}
			render := tc.render
			if render == nil {
				render = fakeRenderer{}
			}
			l, events := newPhaseTest(eng, render)
			if tc.render == nil { // the address cases: a pool of two, both held
				l.addrs = newAddressBook(addressConfig(t, ""))
				for _, holder := range []string{"a", "b"} {
					if _, err := l.addrs.assign(addrService(holder, 80)); err != nil {
						t.Fatal(err)
					}
				}
			}
			var err error
			if tc.update {
				err = l.UpdateLoadBalancer(context.Background(), "c", tc.svc, nil)
			} else {
				_, err = l.EnsureLoadBalancer(context.Background(), "c", tc.svc, nil)
			}
			if got := err == cloudprovider.ImplementedElsewhere; got != tc.refused || err == nil {
				t.Errorf("err = %v; want the no-op answer: %v", err, tc.refused)
			}
			var warnings []string
			for _, e := range *events {
				if e.eventType == corev1.EventTypeWarning {
					warnings = append(warnings, e.reason)
				}
			}
			if len(warnings) != 1 || warnings[0] != tc.wantWarn {
				t.Errorf("Warnings %v, want one %s", warnings, tc.wantWarn)
			}
			if len(eng.applied) != 0 {
				t.Errorf("%d applies, want none", len(eng.applied))
			}
		})
	}
}
