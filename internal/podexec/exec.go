package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// One command in a pod's container: where (Target), its streams, and how
// it ended (ExitCode, Forbidden).

// Target is the container a command runs in.
type Target struct {
	Namespace, Pod, Container string
}

func (t Target) String() string {
	return t.Namespace + "/" + t.Pod + " (container " + t.Container + ")"
}

// Streams are the command's standard streams; Stdin may be nil (none).
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Run runs argv in target and streams its standard streams until it
// exits or ctx ends. A command that exits non-zero returns an error
// ExitCode reads; one the apiserver refuses an error Forbidden reports.
func Run(ctx context.Context, rc *rest.Config, client kubernetes.Interface, target Target, argv []string, s Streams) error {
	opts := &corev1.PodExecOptions{Container: target.Container, Command: argv, Stdin: s.Stdin != nil, Stdout: s.Stdout != nil, Stderr: s.Stderr != nil}
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(target.Namespace).Name(target.Pod).SubResource("exec").
		VersionedParams(opts, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(rc, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("exec in %s: %w", target, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(rc, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("exec in %s: %w", target, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("exec in %s: %w", target, err)
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr})
}

// ExitCode is the exit code of a command Run ran that exited non-zero.
func ExitCode(err error) (int, bool) {
	var exit utilexec.CodeExitError
	if errors.As(err, &exit) {
		return exit.Code, true
	}
	return 0, false
}

// Forbidden reports whether the apiserver refused the exec (RBAC): the
// caller may not create pods/exec there. The refusal comes as a status
// error or, over the upgraded connection, as its text.
func Forbidden(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden"))
}
