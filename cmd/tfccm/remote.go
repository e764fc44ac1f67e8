package main

// Commands whose answer lives only in the leader: its work_dir (the
// workspaces as it left them) and its tofu (a state lock's holder, and
// releasing it). From a workstation, `tfccm workspaces` and `tfccm
// unlock` without --config find the leader through its Lease and run
// themselves in its pod (pods/exec through internal/podexec, with the user's credentials: RBAC
// decides, and only whoever may exec into tfccm's pods can), against the
// cloud config the pod was started with. The command goes as an argument
// vector, never through a shell.

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tfccm/tfccm/internal/podexec"
)

// leaderContainer is the CCM's container in the chart's pods.
const leaderContainer = "cloud-controller-manager"

// cloudConfigFlag is the CCM's flag naming its cloud config.
const cloudConfigFlag = "--cloud-config="

// inLeader runs `tfccm COMMAND --config <the leader's cloud config> ARGS`
// in the leader's pod and copies its output; it returns the command's exit
// code.
func inLeader(ctx context.Context, kf kubeFlags, lf leaderFlags, command string, args []string, stdout, stderr io.Writer) (int, error) {
	rc, client, err := kf.connect()
	if err != nil {
		return exitError, err
	}
	l, err := findLeader(ctx, client, lf, time.Now())
	if err != nil {
		return exitError, err
	}
	pod, err := leaderPod(ctx, client, lf.namespace, l)
	if err != nil {
		return exitError, err
	}
	argv, err := leaderCommand(pod, command, args)
	if err != nil {
		return exitError, err
	}
	fmt.Fprintf(stderr, "(in the leader, pod %s/%s)\n", pod.Namespace, pod.Name)
	err = execIn(ctx, rc, client, pod, argv, stdout, stderr)
	if code, ok := podexec.ExitCode(err); ok {
		return code, nil
	}
	switch {
	case podexec.Forbidden(err):
		return exitError, &permissionError{verb: "create", what: "pods/exec " + pod.Name, where: "in namespace " + pod.Namespace}
	case err != nil:
		return exitError, fmt.Errorf("run in pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return exitOK, nil
}

// leaderCommand is the argument vector to run in pod: tfccm, the command,
// the cloud config the CCM container was started with, then args.
func leaderCommand(pod *corev1.Pod, command string, args []string) ([]string, error) {
	for _, c := range pod.Spec.Containers {
		if c.Name != leaderContainer {
			continue
		}
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if path, ok := strings.CutPrefix(a, cloudConfigFlag); ok && path != "" {
				return append([]string{"tfccm", command, "--config", path}, args...), nil
			}
		}
		return nil, fmt.Errorf("pod %s/%s: container %s has no %s argument", pod.Namespace, pod.Name, leaderContainer, cloudConfigFlag)
	}
	return nil, fmt.Errorf("pod %s/%s has no container %s: not a tfccm pod of the chart", pod.Namespace, pod.Name, leaderContainer)
}

// execIn runs argv in the CCM container of pod and streams its output.
func execIn(ctx context.Context, rc *rest.Config, client kubernetes.Interface, pod *corev1.Pod, argv []string, stdout, stderr io.Writer) error {
	return podexec.Run(ctx, rc, client, podexec.Target{Namespace: pod.Namespace, Pod: pod.Name, Container: leaderContainer}, argv, podexec.Streams{Stdout: stdout, Stderr: stderr})
}

// workspaceName is what a workspace's name may be (lb-<cluster>-<hash>,
// routes): checked before it is sent to the leader.
var workspaceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
