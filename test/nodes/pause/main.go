// Command pause is the pod sandbox process of real-node clusters (the image
// registry.k8s.io/pause that containerd pins): it holds the pod's
// namespaces doing nothing, reaps children when it is the pod's PID 1, and
// exits on SIGINT or SIGTERM. Static, so its image needs nothing else.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
