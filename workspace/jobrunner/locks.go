package jobrunner

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Locks tells state locks left by this controller's runner pods that are
// gone (workspace.Options.GoneLockHolder): tofu in a pod records
// "<user>@<pod name>" as a lock's holder, and a runner pod's name carries
// the hash of the controller's identity.
type Locks struct {
	cfg    *Config
	client atomic.Pointer[kubernetes.Interface]
}

// NewLocks returns a Locks for cfg; it answers false until SetClient.
func NewLocks(cfg *Config) *Locks { return &Locks{cfg: cfg} }

// SetClient gives Locks its Kubernetes client.
func (l *Locks) SetClient(c kubernetes.Interface) { l.client.Store(&c) }

// podOf is the runner pod named in a lock holder "user@host" of this
// controller, "" when the holder is not one.
func (l *Locks) podOf(who string) string {
	_, host, ok := strings.Cut(who, "@")
	if !ok || !strings.HasPrefix(host, namePrefix+ownerHash(l.cfg.Identity)+"-") {
		return ""
	}
	return host
}

// Gone reports whether who is a runner pod of this controller that no
// longer runs: deleted, or ended (its tofu was killed, or it ran out of
// memory, leaving the lock behind).
func (l *Locks) Gone(who string) bool {
	pod := l.podOf(who)
	c := l.client.Load()
	if pod == "" || c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := (*c).CoreV1().Pods(l.cfg.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil || p.Labels[LabelOwner] != ownerHash(l.cfg.Identity) {
		return false
	}
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
