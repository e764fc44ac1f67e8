package jobrunner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
)

// TestRunnerPodsUnderPodSecurity runs the stand-in against a real
// apiserver (Pod Security admission) and kube-controller-manager's Job
// controller, in runner namespaces that enforce the restricted and the
// baseline level. Runner pods as configured by default (and with the
// kubernetes backend's token) are admitted at restricted and mount no
// token of their own accord; the settings an admin must ask for (a
// hostPath plugin cache, the host network) are refused, and the run fails
// within a minute with the admission's words instead of waiting out the
// Job's deadline.
func TestRunnerPodsUnderPodSecurity(t *testing.T) {
	cluster := devcluster.ForTestWith(t, devcluster.Options{Controllers: []string{"job-controller", "garbage-collector-controller"}})
	client := cluster.Client()
	ctx := context.Background()
	for _, level := range []string{"restricted", "baseline"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "runners-" + level, Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tfccm-runner"}}
		if _, err := client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, level string
		set         func(*Config)
		refused     string // "": admitted
	}{
		{"default at restricted", "restricted", func(*Config) {}, ""},
		{"kubernetes backend's token at restricted", "restricted", func(c *Config) { c.StateToken = true }, ""},
		{"hostPath plugin cache at restricted", "restricted", func(c *Config) { c.PluginCache = "/var/cache/tfccm/plugins" }, `violates PodSecurity "restricted:latest"`},
		{"hostPath plugin cache at baseline", "baseline", func(c *Config) { c.PluginCache = "/var/cache/tfccm/plugins" }, `violates PodSecurity "baseline:latest": hostPath volumes (volume "plugin-cache")`},
		{"host network at baseline", "baseline", func(c *Config) { c.HostNetwork = true }, `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`},
		{"default at baseline", "baseline", func(*Config) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := &Config{
				Namespace: "runners-" + tc.level, Image: "tfccm:test", ServiceAccount: "tfccm-runner",
				Identity: "tfccm/" + tc.name, Deadline: 10 * time.Minute, Grace: time.Second,
			}
			tc.set(cfg)
			dir := filepath.Join(t.TempDir(), "lb-a")
			write(t, dir, map[string]string{"main.tf": ""})
			if tc.refused != "" {
				start := time.Now()
				res, err := Run(ctx, client, cfg, dir, []string{"plan", "-no-color"}, nil)
				took := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				if res.Exit != 1 || !strings.Contains(res.Stderr, "Error: Runner pod refused") || !strings.Contains(res.Stderr, tc.refused) ||
					!strings.Contains(res.Stderr, "Namespace "+cfg.Namespace+" refused") {
					t.Errorf("result %+v; want the run failed with %q", res, tc.refused)
				}
				if took > time.Minute {
					t.Errorf("the refused run took %v; want under a minute", took)
				}
				t.Logf("refused in %v: %s", took.Round(time.Millisecond), res.Stderr)
				return
			}
			// Admitted: the Job's pod is created (never scheduled: no
			// nodes); the run is then interrupted.
			runCtx, cancel := context.WithCancel(ctx)
			ended, done := context.WithCancel(ctx)
			var res *result
			var runErr error
			go func() {
				defer done()
				res, runErr = Run(runCtx, client, cfg, dir, []string{"plan", "-no-color"}, nil)
			}()
			pod, err := runnerPod(ended, client, cfg)
			cancel()
			<-ended.Done()
			if err != nil {
				t.Fatalf("%v; the run: %+v, %v", err, res, runErr)
			}
			if runErr == nil || !strings.Contains(runErr.Error(), "interrupted") {
				t.Errorf("the interrupted run: %+v, %v", res, runErr)
			}
			checkTokens(t, pod, cfg.StateToken)
		})
	}
}

// runnerPod waits up to a minute (while ctx lasts) for the pod of cfg's
// runner Job.
func runnerPod(ctx context.Context, client kubernetes.Interface, cfg *Config) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		pods, err := client.CoreV1().Pods(cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelOwner + "=" + ownerHash(cfg.Identity)})
		if err == nil && len(pods.Items) > 0 {
			return &pods.Items[0], nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("no runner pod was created within a minute, or the run ended first")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkTokens checks the pod as admitted: no token mounted automatically,
// the projected one in the container result and, with a state token, in
// tofu's; the result's key in the container result alone.
func checkTokens(t *testing.T, pod *corev1.Pod, stateToken bool) {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			t.Errorf("pod %s got the automatic token volume %s", pod.Name, v.Name)
		}
	}
	mounts := map[string]string{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		keyed := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == envResultKey && e.Value != "" })
		if keyed != (c.Name == "result") {
			t.Errorf("pod %s: container %s has the result key: %v", pod.Name, c.Name, keyed)
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath == podToken {
				mounts[c.Name] = m.Name
			}
		}
	}
	want := map[string]string{"result": "token"}
	if stateToken {
		want["tofu"] = "token"
	}
	if fmt.Sprint(mounts) != fmt.Sprint(want) {
		t.Errorf("pod %s: token mounts %v, want %v", pod.Name, mounts, want)
	}
}
