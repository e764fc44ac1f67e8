package lbcontroller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/workspace/plans"
)

// TestPlanSecretSizeCap: a plan whose sealed form is over the cap is not
// kept (no Secret, the one kept before stays) and the error names its
// size, the cap and the Secret; a plan under the cap is kept.
func TestPlanSecretSizeCap(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	client := fake.NewClientset()
	store := newPlanSecrets("tfccm", func(string) (*corev1.Service, bool) { return svc, false })
	store.setClient(client)
	store.maxSize = 4096
	small := &plans.Saved{Plan: plans.PendingPlan{Hash: "h1"}, File: []byte("plan")}
	if err := store.SavePlan(ctx, "lb-a", small); err != nil {
		t.Fatal(err)
	}
	large := &plans.Saved{Plan: plans.PendingPlan{Hash: "h2"}, File: []byte(strings.Repeat("x", 8192))}
	err := store.SavePlan(ctx, "lb-a", large)
	var tooLarge *plans.TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("err = %v, want a TooLargeError", err)
	}
	for _, want := range []string{fmt.Sprintf("is %d bytes", tooLarge.Size), "over the cap of 4096 bytes", "Secret tfccm/tfccm-plan-lb-a", "stays as it was"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if tooLarge.Size <= 8192 {
		t.Errorf("size %d, want the sealed size (over 8192)", tooLarge.Size)
	}
	sec, err := client.CoreV1().Secrets("tfccm").Get(ctx, "tfccm-plan-lb-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := sec.Annotations["tfccm.io/plan-hash"]; h != "h1" {
		t.Errorf("the kept plan is %q, want the one under the cap (h1)", h)
	}
	if got := newPlanSecrets("tfccm", nil).sizeCap(); got != plans.MaxSealedPlan {
		t.Errorf("default cap %d, want %d", got, plans.MaxSealedPlan)
	}
}
