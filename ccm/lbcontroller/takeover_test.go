package lbcontroller

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/config"
)

func TestTakeoverStandby(t *testing.T) {
	cfg := addressConfig(t, "compat {\n  metallb = true\n  metallb_takeover = \"prepare\"\n}\n")
	svc := func(ns, name string, class *string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{LoadBalancerClass: class}}
	}
	web, api, classed := svc("shop", "web", nil), svc("shop", "api", nil), svc("shop", "own", new(string))
	want := func(tk *takeover, s *corev1.Service, standby bool) {
		t.Helper()
		got, err := tk.standby(s)
		if err != nil || got != standby {
			t.Errorf("standby(%s/%s) = %t, %v; want %t", s.Namespace, s.Name, got, err, standby)
		}
	}

	var none *takeover // metallb_takeover = "now"
	want(none, web, false)
	if newTakeover(addressConfig(t, "compat {\n  metallb = true\n}\n")) != nil {
		t.Error("a takeover without metallb_takeover = \"prepare\"")
	}

	tk := newTakeover(cfg)
	if _, err := tk.standby(web); !errors.Is(err, errTakeoverUnknown) {
		t.Fatalf("standby before the list was read: %v, want errTakeoverUnknown", err)
	}
	want(tk, classed, false) // tfccm's own class is never MetalLB's
	client := fake.NewSimpleClientset()
	tk.setClient(client)
	changes := 0
	tk.onChange(func() { changes++ })
	ctx := context.Background()

	tk.poll(ctx) // no ConfigMap: nothing taken over yet
	want(tk, web, true)
	want(tk, api, true)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: config.TakeoverConfigMap},
		Data: map[string]string{config.TakeoverKey("shop", "web"): "2026-12-02T16:00:00Z"}}
	if _, err := client.CoreV1().ConfigMaps(cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tk.poll(ctx)
	tk.poll(ctx) // unchanged: no second re-render
	want(tk, web, false)
	want(tk, api, true)

	cm.Data[config.TakeoverAll] = ""
	if _, err := client.CoreV1().ConfigMaps(cfg.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tk.poll(ctx)
	want(tk, api, false)
	if changes != 3 {
		t.Errorf("%d changes told, want 3 (read, one Service, all)", changes)
	}

	// The ConfigMap in another namespace is no admin's list.
	other := newTakeover(cfg)
	c2 := fake.NewSimpleClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: config.TakeoverConfigMap},
		Data: map[string]string{config.TakeoverAll: ""}})
	other.setClient(c2)
	other.poll(ctx)
	want(other, web, true)
}
