package jobrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tfccm/tfccm/internal/podexec"
)

// The stand-in's side of the runner pool: one tofu command sent to a
// leased pooled pod through pods/exec (`tfccm run --exec`), the packed
// workspace as a frame on its stdin (credentials in the environment
// included, as a Job's input Secrets carry them: never in argv, a log or
// an Event), the result as a frame on its stdout.

// poolArgv is what runs in a pooled pod for one command.
var poolArgv = []string{podCLI, "run", "--exec", "--work", podWork, "--plugin-cache", podCache}

// maxPoolTries bounds the pods one command tries when they are busy or
// gone before its request reached them.
const maxPoolTries = 8

// RunPooled runs tofu args for the workspace in dir in a pooled pod and
// returns tofu's result, as Run does with a Job.
func RunPooled(ctx context.Context, rc *rest.Config, client kubernetes.Interface, cfg *Config, dir string, args, env []string) (*result, error) {
	ws := cfg.workspaceOf(dir)
	if err := waitOthers(ctx, client, cfg, ws); err != nil {
		return nil, err
	}
	a := newArchive()
	if err := a.addDir(dir); err != nil {
		return nil, err
	}
	if err := newRequest(a, dir, args, env); err != nil {
		return nil, err
	}
	req, err := a.bytes()
	if err != nil {
		return nil, err
	}
	if len(req) > maxFrame {
		// split says it the way Jobs do.
		if _, err := split(req, "workspace "+ws); err != nil {
			return nil, err
		}
	}
	skip := map[string]bool{}
	for try := 0; ; try++ {
		pod, release, err := lease(ctx, client, cfg, skip)
		if err != nil {
			return nil, err
		}
		out, sent, err := execRequest(ctx, rc, client, cfg, pod, req)
		release()
		switch {
		case err == nil:
			res, err := decodeResult(out, dir)
			if err != nil {
				replace(client, cfg, pod.Name)
				return &result{Exit: 1, Stderr: fmt.Sprintf("Error: Runner result refused\n\nThe result of runner pod %s/%s: %v.\n", cfg.Namespace, pod.Name, err)}, nil
			}
			if p := planOut(args); p != "" && (res.Exit == 0 || res.Exit == 2) && !exists(filepath.Join(dir, p)) {
				res.Stderr += fmt.Sprintf("\nError: Saved plan missing\n\nThe runner's tofu plan exited %d, but the plan it saves (%s) did not come back with its result.\n", res.Exit, p)
				res.Exit = 1
			}
			return res, nil
		case ctx.Err() != nil:
			return nil, errors.New("interrupted: the exec into its runner pool pod was closed (tofu got SIGINT to save its state and release its lock)")
		case podexec.Forbidden(err):
			return &result{Exit: 1, Stderr: forbiddenExec(cfg, pod.Name, err)}, nil
		}
		var busy *busyError
		if errors.As(err, &busy) || (!sent && podGone(ctx, client, cfg, pod.Name)) {
			// Its tofu never ran: another pod.
			skip[pod.Name] = true
			if try+1 < maxPoolTries {
				continue
			}
			return nil, fmt.Errorf("runner pool: %d pods tried: %w", maxPoolTries, err)
		}
		if podGone(ctx, client, cfg, pod.Name) {
			// Deleted, evicted, its node gone while tofu ran: the
			// engine retries the run (a state lock the pod left is
			// released, Locks.Gone).
			return &result{Exit: 1, Stderr: fmt.Sprintf("Error: Runner pod gone\n\nRunner pool pod %s/%s ended while it ran tofu %s (deleted, evicted or its node gone); the run is retried.\n", cfg.Namespace, pod.Name, command(args))}, nil
		}
		// The pod failed the request: it is replaced.
		replace(client, cfg, pod.Name)
		return &result{Exit: 1, Stderr: fmt.Sprintf("Error: Runner pod failed\n\nRunner pool pod %s/%s failed tofu %s: %v. The pod is replaced; the run is retried.\n", cfg.Namespace, pod.Name, command(args), err)}, nil
	}
}

// busyError: the pod was running another request.
type busyError struct{ pod string }

func (e *busyError) Error() string { return "runner pool pod " + e.pod + " is busy" }

// execRequest sends req to pod and reads its result frame. sent reports
// whether the whole request reached the pod (so its tofu may have run).
// Stdin stays open until the result is read: closing it (ctx ended)
// interrupts the pod's tofu.
func execRequest(ctx context.Context, rc *rest.Config, client kubernetes.Interface, cfg *Config, pod *corev1.Pod, req []byte) ([]byte, bool, error) {
	stdinR, stdinW := io.Pipe()
	var wrote atomic.Bool
	go func() {
		if err := writeFrame(stdinW, req); err == nil {
			wrote.Store(true)
		}
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		_ = stdinW.Close()
	}()
	var stdout, stderr bytes.Buffer
	target := podexec.Target{Namespace: cfg.Namespace, Pod: pod.Name, Container: poolContainer}
	err := podexec.Run(ctx, rc, client, target, poolArgv, podexec.Streams{Stdin: stdinR, Stdout: &stdout, Stderr: &stderr})
	if code, ok := podexec.ExitCode(err); ok {
		if code == exitBusy {
			return nil, false, &busyError{pod: pod.Name}
		}
		return nil, wrote.Load(), fmt.Errorf("tfccm run --exec exited %d: %s", code, strings.TrimSpace(lastLines(stderr.String(), 5)))
	}
	if err != nil {
		return nil, wrote.Load(), fmt.Errorf("exec in runner pool pod %s/%s: %w", cfg.Namespace, pod.Name, err)
	}
	out, err := readFrame(&stdout, maxFrame)
	if err != nil {
		return nil, true, fmt.Errorf("runner pool pod %s/%s: result: %w", cfg.Namespace, pod.Name, err)
	}
	return out, true, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// podGone reports whether pooled pod name no longer runs (deleted,
// being deleted, failed, its node gone).
func podGone(ctx context.Context, client kubernetes.Interface, cfg *Config, name string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	p, err := client.CoreV1().Pods(cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && c.Reason == "PodCompleted" {
			return true
		}
	}
	return false
}

// replace deletes a pooled pod that failed a request: its Deployment
// starts a fresh one. (The stand-in's stderr is tofu's to the engine:
// the result that follows says it.)
func replace(client kubernetes.Interface, cfg *Config, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = client.CoreV1().Pods(cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

// forbiddenExec is the diagnostic when RBAC refuses the exec.
func forbiddenExec(cfg *Config, pod string, err error) string {
	return fmt.Sprintf("Error: Runner pool exec refused\n\nThe CCM may not exec into runner pool pod %s/%s (%v): its Role <release>:runner-control needs pods/exec get and create (WebSocket exec needs both), pods get, list, delete and deployments get, create, update, delete in namespace %s (the Helm chart grants them with runner.pool > 0).\n", cfg.Namespace, pod, err, cfg.Namespace)
}
