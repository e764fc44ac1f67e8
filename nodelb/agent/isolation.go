// Isolation: a node cut off from the network holds nothing, so it never
// answers beside the new holder when its link comes back.

package agent

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// isolation tracks whether this node is cut off: the API server does not
// answer (twice in a row, checked every 500 ms) while no other agent is
// alive in the gossip although some were. A node that is merely alone (one
// node, or the others gone) or whose API server is down while its peers
// answer keeps serving. After being cut off it stays out for settle, so
// the gossip merges again before it may hold anything.
type isolation struct {
	mu    sync.Mutex
	cut   bool
	until time.Time
}

const (
	apiCheckEvery = 500 * time.Millisecond
	settle        = 2 * time.Second
)

func (i *isolation) isCut() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cut || time.Now().Before(i.until)
}

func (i *isolation) watch(ctx context.Context, kube kubernetes.Interface, node string, m *membership, changed func()) {
	t := time.NewTicker(apiCheckEvery)
	defer t.Stop()
	failures, sawPeers := 0, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, apiCheckEvery)
		_, err := kube.CoreV1().Nodes().Get(cctx, node, metav1.GetOptions{ResourceVersion: "0"})
		cancel()
		alone := len(m.members()) <= 1
		sawPeers = sawPeers || !alone
		if err != nil {
			failures++
		} else {
			failures = 0
		}
		cut := failures >= 2 && alone && sawPeers
		i.mu.Lock()
		was := i.cut
		i.cut = cut
		if was && !cut {
			i.until = time.Now().Add(settle)
		}
		i.mu.Unlock()
		if cut != was {
			klog.InfoS("node isolation changed: a node cut off from the API server and every other agent holds no VIP", "cut", cut)
			changed()
			if !cut {
				time.AfterFunc(settle, changed)
			}
		}
	}
}
