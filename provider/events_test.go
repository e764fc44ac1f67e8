package provider

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestEventsRecordChangesNotRetries(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	e := newEvents()
	e.setRecorder(rec)
	svc := phaseService()
	other := phaseService()
	other.UID = "u2"
	for _, ev := range []struct {
		obj              *corev1.Service
		typ, reason, msg string
	}{
		{svc, corev1.EventTypeWarning, ReasonApplyFailed, "tofu plan failed (attempt 1): Invalid value"},
		{svc, corev1.EventTypeWarning, ReasonApplyFailed, "tofu plan failed (attempt 2): Invalid value"}, // a retry: dropped
		{other, corev1.EventTypeWarning, ReasonApplyFailed, "tofu plan failed (attempt 1): Invalid value"},
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, "annotation tfccm.io/vars: not valid JSON"}, // a new problem
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, "annotation tfccm.io/vars: not valid JSON"}, // dropped
		{svc, corev1.EventTypeNormal, ReasonApplied, "plan applied in 1s"},
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, "annotation tfccm.io/vars: not valid JSON"}, // again after a success
		{svc, corev1.EventTypeWarning, ReasonRenderFailed, strings.Repeat("é", 2000)},
	} {
		e.event(ev.obj, ev.typ, ev.reason, ev.msg)
	}
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	want := []string{
		"Warning TerraformApplyFailed tofu plan failed (attempt 1): Invalid value",
		"Warning TerraformApplyFailed tofu plan failed (attempt 1): Invalid value",
		"Warning TerraformRenderFailed annotation tfccm.io/vars: not valid JSON",
		"Normal TerraformApplied plan applied in 1s",
		"Warning TerraformRenderFailed annotation tfccm.io/vars: not valid JSON",
	}
	if len(got) != len(want)+1 {
		t.Fatalf("recorded %d events, want %d: %q", len(got), len(want)+1, got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d = %q, want %q", i, got[i], w)
		}
	}
	last := got[len(got)-1]
	if len(last) > maxEventMessage+len("Warning TerraformRenderFailed ") || !strings.HasSuffix(last, "... (truncated)") {
		t.Errorf("long message not truncated: %d bytes", len(last))
	}
}
