// Command devcluster starts and stops tfccm's local control plane (etcd +
// kube-apiserver on loopback) for `make demo` and manual work:
//
//	devcluster up   [--dir DIR]   start detached, print the kubeconfig path
//	devcluster down [--dir DIR]   stop it and remove DIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tfccm/tfccm/test/devcluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: devcluster up|down [--dir DIR]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".work/devcluster", "directory for certificates, data, logs and the kubeconfig")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	switch args[0] {
	case "up":
		if running(abs) {
			fmt.Println(filepath.Join(abs, "kubeconfig"))
			return nil
		}
		_ = os.RemoveAll(abs)
		c, err := devcluster.Start(context.Background(), devcluster.Options{Dir: abs, Detach: true})
		if err != nil {
			return err
		}
		fmt.Println(c.Kubeconfig())
		return nil
	case "down":
		var errs []error
		for _, name := range []string{"kube-apiserver", "etcd"} {
			if pid, ok := readPID(abs, name); ok {
				errs = append(errs, devcluster.StopPID(pid, 20*time.Second))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return os.RemoveAll(abs)
	default:
		return fmt.Errorf("unknown command %q: use up or down", args[0])
	}
}

func readPID(dir, name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

func running(dir string) bool {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		pid, ok := readPID(dir, name)
		if !ok {
			return false
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return false
		}
	}
	return true
}
