package main

// The leader names its pod on its Lease. The holder identity upstream's
// election writes is "<host name>_<uuid>": the pod's name, except with
// host networking, where the host name is the node's. So a new leader,
// when the chart gives it its pod's name (POD_NAME, from the downward
// API), writes annotations.LeaderPod and annotations.LeaderIdentity on
// the Lease, for `kubectl tfccm` to find the leader's pod. The election
// keeps a Lease's annotations on its renewals.

import (
	"context"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tfccm/tfccm/annotations"
)

// podNameEnv is the environment variable the chart sets to the pod's name.
const podNameEnv = "POD_NAME"

// nameLeaderPod writes this leader's pod and identity on the Lease name,
// unless it is no longer the holder; a failure is logged, not fatal (the
// CLI then falls back to the identity's host name).
func nameLeaderPod(leases leaseClient, name, identity string) {
	pod := os.Getenv(podNameEnv)
	if pod == "" || identity == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") != identity {
			return err
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[annotations.LeaderIdentity] = identity
		lease.Annotations[annotations.LeaderPod] = pod
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		klog.ErrorS(err, "Name this leader's pod on the leader Lease", "lease", name, "pod", pod)
	}
}
