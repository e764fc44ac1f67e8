package ccm

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
)

// incarnationsKey is the ConfigMap key listing incarnations, one
// "user@host<TAB>RFC3339 time" per line.
const incarnationsKey = "holders"

// maxIncarnations bounds the list (oldest dropped first).
const maxIncarnations = 100

// incarnations knows which lock holders are earlier leaders of this
// controller. Leader election allows one leader; the cloud-controller-
// manager exits when it loses the lease, so once this process leads,
// every earlier entry is gone and its state locks are stale.
type incarnations struct {
	self string // this process's lock owner (user@host)

	mu       sync.Mutex
	previous map[string]bool
}

func newIncarnations(self string) *incarnations {
	return &incarnations{self: self, previous: map[string]bool{}}
}

// gone reports whether who is an earlier leader (workspace.Options.GoneLockHolder).
func (in *incarnations) gone(who string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return who != in.self && in.previous[who]
}

// record adds this incarnation to the ConfigMap in tfccm's namespace and learns the earlier
// ones. Called once this process leads (Initialize).
func (in *incarnations) record(ctx context.Context, client kubernetes.Interface, namespace string) error {
	cms := client.CoreV1().ConfigMaps(namespace)
	var holders []string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, annotations.Incarnations, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: annotations.Incarnations, Namespace: namespace,
				Labels: map[string]string{annotations.ManagedBy: "tfccm"}}}
		}
		entries := parseIncarnations(cm.Data[incarnationsKey])
		holders = holders[:0]
		for who := range entries {
			holders = append(holders, who)
		}
		entries[in.self] = time.Now().UTC().Format(time.RFC3339)
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[incarnationsKey] = formatIncarnations(entries)
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return err
	}
	in.mu.Lock()
	for _, who := range holders {
		in.previous[who] = true
	}
	in.mu.Unlock()
	klog.InfoS("Recorded this incarnation; state locks held by earlier leaders will be released", "self", in.self, "earlier", len(holders))
	return nil
}

func parseIncarnations(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		who, at, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && who != "" {
			out[who] = at
		}
	}
	return out
}

// formatIncarnations writes the newest maxIncarnations entries, oldest first.
func formatIncarnations(entries map[string]string) string {
	type e struct{ who, at string }
	list := make([]e, 0, len(entries))
	for who, at := range entries {
		list = append(list, e{who, at})
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].at < list[j].at || list[i].at == list[j].at && list[i].who < list[j].who
	})
	if len(list) > maxIncarnations {
		list = list[len(list)-maxIncarnations:]
	}
	var b strings.Builder
	for _, x := range list {
		b.WriteString(x.who + "\t" + x.at + "\n")
	}
	return b.String()
}
