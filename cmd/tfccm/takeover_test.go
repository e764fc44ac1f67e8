package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/config"
)

func TestTakeoverUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"--all", "shop/web"}, {"web"}, {"shop/Web"}, {"shop/web/x"}, {"a.b/web"}} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"takeover"}, args...), &out, &errOut); code != exitUsage {
			t.Errorf("takeover %v: exit %d, want %d (%s)", args, code, exitUsage, errOut.String())
		}
	}
}

func TestTakeOver(t *testing.T) {
	client := fake.NewSimpleClientset()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	keys, err := takeoverKeys(false, []string{"shop/web", "blog/api"})
	if err != nil {
		t.Fatal(err)
	}
	if err := takeOver(ctx, client, "tfccm", keys, now); err != nil {
		t.Fatal(err)
	}
	all, _ := takeoverKeys(true, nil)
	if err := takeOver(ctx, client, "tfccm", all, now); err != nil { // the ConfigMap exists: patched
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, config.TakeoverConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k, v := range cm.Data {
		if v != "2026-12-02T16:00:00Z" {
			t.Errorf("%s = %q, want the time of the take-over", k, v)
		}
		got = append(got, k)
	}
	slices.Sort(got)
	if s := strings.Join(got, " "); s != "all blog.api shop.web" {
		t.Errorf("keys %s, want all blog.api shop.web", s)
	}
}
