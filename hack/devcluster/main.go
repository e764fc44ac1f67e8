// Command devcluster starts and stops tfccm's local control plane (etcd +
// kube-apiserver on loopback) for `make demo` and manual work, optionally
// with real nodes in a local cloud.
//
//	devcluster up   [--dir DIR] [--nodes N]  start detached, print the kubeconfig path
//	devcluster down [--dir DIR]              stop it and remove DIR
//
// With --nodes, the cluster also runs kube-controller-manager,
// kube-scheduler and CoreDNS, and N nodes (containerd, kubelet with
// --cloud-provider=external, kube-proxy) in a local cloud; they wait, tainted
// uninitialized, for a cloud-controller-manager (tfccm). `make tools-nodes`
// builds their parts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/nodes"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: devcluster up|down [--dir DIR] [--nodes N]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".work/devcluster", "directory for certificates, data, logs and the kubeconfig")
	n := fs.Int("nodes", 0, "real nodes to start (up only; 0: control plane alone)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch args[0] {
	case "up":
		if running(abs) {
			fmt.Println(filepath.Join(abs, "kubeconfig"))
			return nil
		}
		_ = os.RemoveAll(abs)
		if *n > 0 {
			c, err := nodes.Up(ctx, nodes.Options{Dir: abs, Nodes: *n, Detach: true, HostRoute: true})
			if err != nil {
				return err
			}
			fmt.Println(c.Kubeconfig())
			return nil
		}
		c, err := devcluster.Start(ctx, devcluster.Options{Dir: abs, Detach: true})
		if err != nil {
			return err
		}
		fmt.Println(c.Kubeconfig())
		return nil
	case "down":
		if nodes.IsNodesDir(abs) {
			return nodes.Down(ctx, abs)
		}
		if err := devcluster.StopDir(abs); err != nil {
			return err
		}
		return os.RemoveAll(abs)
	default:
		return fmt.Errorf("unknown command %q: use up or down", args[0])
	}
}

// running reports whether a control plane from an earlier up still runs in dir.
func running(dir string) bool {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		pid, ok := devcluster.ReadPID(dir, name)
		if !ok || !devcluster.Alive(pid) {
			return false
		}
	}
	return true
}
