package lbcontroller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// TestPoolStatus: a serving pool (the older of two overlapping ones) shows its counts and Ready; a refused one
// shows no counts, Ready=False with the verdict's type as reason, and the
// verdict's condition True with its message.
func TestPoolStatus(t *testing.T) {
	book := ipam.NewBook(&config.Config{LoadBalancer: &config.LoadBalancer{}, Compat: &config.Compat{}})
	good := &poolapi.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: "good", Generation: 2, CreationTimestamp: metav1.Unix(100, 0)}, Spec: poolapi.AddressPoolSpec{Addresses: []string{"10.0.0.0/30", "2001:db8::/126"}}}
	bad := &poolapi.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bad", CreationTimestamp: metav1.Unix(200, 0)}, Spec: poolapi.AddressPoolSpec{Addresses: []string{"10.0.0.2/31"}}}
	verdicts := map[string]ipam.Verdict{}
	for _, v := range book.SetObjectPools([]*poolapi.AddressPool{good, bad}) {
		verdicts[v.Pool] = v
	}
	s := poolStatus(good, verdicts["good"], book)
	if s.Total != "8" || s.InUse != 0 || s.Free != "8" || s.IPv4 == nil || s.IPv4.Total != "4" || s.IPv6 == nil || s.IPv6.Free != "4" {
		t.Errorf("good: counts %+v", s)
	}
	if c := meta.FindStatusCondition(s.Conditions, poolapi.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 2 {
		t.Errorf("good: Ready %+v", c)
	}
	s = poolStatus(bad, verdicts["bad"], book)
	if s.Total != "" || s.IPv4 != nil {
		t.Errorf("bad: counts %+v, want none", s)
	}
	ready := meta.FindStatusCondition(s.Conditions, poolapi.ConditionReady)
	overlaps := meta.FindStatusCondition(s.Conditions, poolapi.ConditionOverlaps)
	invalid := meta.FindStatusCondition(s.Conditions, poolapi.ConditionInvalid)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != poolapi.ConditionOverlaps ||
		overlaps == nil || overlaps.Status != metav1.ConditionTrue || overlaps.Message != verdicts["bad"].Message ||
		invalid == nil || invalid.Status != metav1.ConditionFalse {
		t.Errorf("bad: conditions %+v", s.Conditions)
	}
}
