package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/devcluster"
)

// TestJSONLogs runs the CCM binary with --logging-format=json against a
// real apiserver until it leads: every line it writes, from its flags to
// the leader election through tfccm's own Lease, is one JSON object with
// a message. With the format's registration gone the binary refuses the
// flag, and this test fails. Started with POD_NAME, as the chart starts
// it, the leader also names that pod on its Lease for kubectl tfccm (its
// holder identity names the host, which is not the pod's name here).
func TestJSONLogs(t *testing.T) {
	cluster := devcluster.ForTest(t)
	ccm := startCCM(t, cluster, []string{podNameEnv + "=tfccm-json-pod"}, "--logging-format=json")
	testkit.Eventually(t, 60*time.Second, "the CCM leads through kube-system/"+annotations.LeaderLease+" and names its pod there", func(ctx context.Context) error {
		l, err := cluster.Client().CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		if l.Annotations[annotations.LeaderPod] != "tfccm-json-pod" || l.Annotations[annotations.LeaderIdentity] != *l.Spec.HolderIdentity {
			return fmt.Errorf("the leader %s has not named its pod: %v", *l.Spec.HolderIdentity, l.Annotations)
		}
		return nil
	})
	ccm.stop()

	lines := strings.Split(strings.TrimRight(ccm.output(), "\n"), "\n")
	if len(lines) < 10 {
		t.Fatalf("only %d log lines:\n%s", len(lines), ccm.output())
	}
	for i, line := range lines {
		var entry struct {
			Msg string `json:"msg"`
			TS  any    `json:"ts"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Msg == "" || entry.TS == nil {
			t.Fatalf("line %d of %d is not a JSON log entry (%v): %s", i+1, len(lines), err, line)
		}
	}
	t.Logf("%d JSON lines, from the flags to the hand-over on SIGTERM", len(lines))
}
