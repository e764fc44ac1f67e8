package jobrunner

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// Locks tells state locks left by this controller's runners that are gone
// (workspace.Options.GoneLockHolder): tofu in a runner pod records
// "<job name>@<host>" as a lock's holder (see namePrefix), and a runner
// Job's name carries the hash of the controller's identity.
type Locks struct {
	cfg    *Config
	client atomic.Pointer[kubernetes.Interface]
}

// NewLocks returns a Locks for cfg; it answers false until SetClient.
func NewLocks(cfg *Config) *Locks { return &Locks{cfg: cfg} }

// SetClient gives Locks its Kubernetes client.
func (l *Locks) SetClient(c kubernetes.Interface) { l.client.Store(&c) }

// jobOf is the runner Job of this controller named in a lock holder
// "user@host", "" when the holder is not one.
func (l *Locks) jobOf(who string) string {
	user, _, ok := strings.Cut(who, "@")
	if !ok || !strings.HasPrefix(user, namePrefix+ownerHash(l.cfg.Identity)+"-") {
		return ""
	}
	return user
}

// pooledPodOf is the runner pool pod of this controller named in a lock
// holder "user@host" (a pooled pod's USER is its name), "" when the holder
// is not one.
func (l *Locks) pooledPodOf(who string) string {
	user, _, ok := strings.Cut(who, "@")
	if !ok || !strings.HasPrefix(user, l.cfg.PoolName()+"-") {
		return ""
	}
	return user
}

// Gone reports whether who is a runner of this controller that no longer
// runs: no pod of its Job is pending or running (deleted, evicted, its
// tofu killed, out of memory), or the pooled pod it names is gone
// (deleted, its node gone, replaced after a failed request), so the lock
// it left is nobody's.
func (l *Locks) Gone(who string) bool {
	c := l.client.Load()
	if c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if pod := l.pooledPodOf(who); pod != "" {
		return podGone(ctx, *c, l.cfg, pod)
	}
	job := l.jobOf(who)
	if job == "" {
		return false
	}
	pods, err := jobPods(ctx, *c, l.cfg, job)
	if err != nil {
		return false
	}
	return !running(pods.Items)
}

// running reports whether one of pods is pending or running.
func running(pods []corev1.Pod) bool {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}
