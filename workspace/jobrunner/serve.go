package jobrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The pod side of the runner pool (terraform { job { pool = N } }): a
// pooled pod's main process (`tfccm run --serve`) only keeps the pod
// alive; each tofu command comes as `tfccm run --exec` through the
// pods/exec subresource, reads one request frame from stdin (the packed
// workspace, its command and environment: what a Job's input Secrets
// carry) and writes one result frame to stdout (what a Job's result
// Secrets carry). Nothing goes through argv or the pod's logs.

// exitBusy is `tfccm run --exec`'s exit code when the pod already runs a
// request: the CCM tries another pod. No frame is read or written.
const exitBusy = 75

// busyFile is the lock a pooled pod holds while it runs a request: one
// request at a time per pod.
const busyFile = "busy"

// lockBusy takes the pod's busy lock without waiting; ok is false when
// another request holds it.
func lockBusy(work string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(filepath.Join(work, busyFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// serveMain is a pooled pod's main process: it waits for SIGTERM (the pod
// deleted: the Deployment scaled down or rebalanced), then for a request
// still running to end, within the pod's grace period.
func serveMain(work string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Fprintln(stderr, "tfccm run: serving runner requests (pods/exec)")
	<-ctx.Done()
	for {
		f, ok, err := lockBusy(work)
		if err != nil || ok {
			if f != nil {
				_ = f.Close()
			}
			return 0
		}
		time.Sleep(time.Second)
	}
}

// execMain runs one request of a pooled pod: stdin carries the request
// frame, stdout gets the result frame. Stdin closed before the result
// (the CCM interrupted the command, or its exec ended) interrupts tofu,
// which saves its state and releases its lock.
func execMain(stdin io.Reader, stdout, stderr io.Writer, work, cache, tofu string) int {
	busy, ok, err := lockBusy(work)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm run: %v\n", err)
		return 1
	}
	if !ok {
		return exitBusy
	}
	defer busy.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	out, err := serveOne(ctx, stdin, work, cache, tofu)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm run: %v\n", err)
		return 1
	}
	if err := writeFrame(stdout, out); err != nil {
		fmt.Fprintf(stderr, "tfccm run: %v\n", err)
		return 1
	}
	return 0
}

// serveOne reads a request frame from stdin, runs it in a fresh directory
// under work and returns the result archive.
func serveOne(ctx context.Context, stdin io.Reader, work, cache, tofu string) ([]byte, error) {
	in, err := readFrame(stdin, maxFrame)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Nothing more comes after the request: stdin ends when the
		// CCM lets go of the exec.
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	dir := filepath.Join(work, "run")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out, _, err := runPacked(ctx, in, dir, cache, tofu)
	return out, err
}
