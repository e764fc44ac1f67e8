package lbcontroller

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/tofu"
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

// TestStatusAfterRefusal: a Service refused by the template (the service
// controller told its no-op) whose workspace tfccm later applies by itself
// (a template change re-rendered it) gets the load balancer status the
// controller would have written; one the controller asked for again, or
// never refused, is left to the controller.
func TestStatusAfterRefusal(t *testing.T) {
	invalid := workspace.Status{Phase: workspace.PhaseFailed, Err: &tofu.Error{Op: "plan", Summary: "Invalid value for variable", Invalid: true}}
	applied := workspace.Status{Phase: workspace.PhaseApplied, Hash: "h", AppliedHash: "h", Outputs: ingressOutputs(`[{"ip":"10.0.0.5","ip_mode":"VIP"}]`)}
	for _, tc := range []struct {
		name       string
		first      workspace.Status // what the engine says when the controller asks
		askedAgain bool             // the controller asks again (a Service edit) before the apply
		drift      bool             // a drift check's repair comes first
		want       string           // the status address afterwards
	}{
		{"refused, then applied by tfccm", invalid, false, false, "10.0.0.5"},
		{"refused, a drift repair, then applied by tfccm", invalid, false, true, "10.0.0.5"},
		{"refused, then asked again", invalid, true, false, ""},
		{"never refused", workspace.Status{Phase: workspace.PhaseRunning}, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := phaseService()
			eng := &fakeLBEngine{status: tc.first}
			l, _ := newPhaseTest(eng, fakeRenderer{})
			client := withCluster(t, l, svc)
			_, _ = l.EnsureLoadBalancer(context.Background(), "c", svc, nil)
			if tc.askedAgain {
				eng.status = workspace.Status{Phase: workspace.PhaseRunning}
				_, _ = l.EnsureLoadBalancer(context.Background(), "c", svc, nil)
			}
			if tc.drift { // the old content re-applied: not the refused inputs' apply
				eng.status = workspace.Status{Phase: workspace.PhaseApplied, Hash: "old", AppliedHash: "old", Outputs: ingressOutputs(`[{"ip":"10.0.0.9"}]`)}
				l.onResult("lb-c-u1", workspace.Result{Op: "apply", Drift: true, Changed: true, Hash: "old"})
			}
			eng.status = applied
			l.onResult("lb-c-u1", workspace.Result{Op: "apply", Changed: true, Hash: "h"})
			got, err := client.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ip := ""
			if len(got.Status.LoadBalancer.Ingress) > 0 {
				ip = got.Status.LoadBalancer.Ingress[0].IP
			}
			if ip != tc.want {
				t.Errorf("status address %q, want %q", ip, tc.want)
			}
		})
	}
}

// TestResultOfAnEarlierSpecKeepsTheRefusal: a Service changed to refused
// inputs while its workspace still applied the spec before (as a port
// added, then an annotation a tenant may not set) keeps Accepted=False
// when that apply ends: its result is of the earlier inputs. A spec the
// engine got since the refusal (a template change made the inputs
// acceptable) is told Accepted=True as usual.
func TestResultOfAnEarlierSpecKeepsTheRefusal(t *testing.T) {
	for _, tc := range []struct {
		name         string
		hashAtResult string // the engine's spec when the result is told
		wantAccepted metav1.ConditionStatus
	}{
		{"the earlier spec's apply ends", "old", metav1.ConditionFalse},
		{"a spec rendered since is applied", "new", metav1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := phaseService()
			eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning, Hash: "old"}}
			l, _ := newPhaseTest(eng, fakeRenderer{err: errors.New("annotation tfccm.io/retain-on-delete: namespace c may not keep its load balancers")})
			client := withCluster(t, l, svc)
			if _, err := l.EnsureLoadBalancer(context.Background(), "c", svc, nil); err != cloudprovider.ImplementedElsewhere {
				t.Fatalf("err = %v, want the refusal's no-op", err)
			}
			eng.status = workspace.Status{Phase: workspace.PhaseApplied, Hash: tc.hashAtResult, AppliedHash: tc.hashAtResult, Outputs: ingressOutputs(`[{"ip":"10.0.0.5"}]`)}
			l.onResult("lb-c-u1", workspace.Result{Op: "apply", Changed: true, Hash: tc.hashAtResult})
			got, err := client.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			accepted := meta.FindStatusCondition(got.Status.Conditions, ConditionAccepted)
			programmed := meta.FindStatusCondition(got.Status.Conditions, ConditionProgrammed)
			if accepted == nil || accepted.Status != tc.wantAccepted {
				t.Errorf("Accepted %+v, want %s", accepted, tc.wantAccepted)
			}
			if programmed == nil || programmed.Status != metav1.ConditionTrue {
				t.Errorf("Programmed %+v, want True (the apply ended)", programmed)
			}
		})
	}
}

// withCluster gives l a clientset and a Service lister holding svc, for
// the conditions and status it writes; it returns the clientset.
func withCluster(t *testing.T, l *loadBalancers, svc *corev1.Service) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(svc.DeepCopy())
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(svc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	l.conds.setClient(client)
	l.conds.setLister(corelisters.NewServiceLister(idx))
	return client
}
