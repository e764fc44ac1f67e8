// `tfccm node-agent`: the node-mode agent the chart runs as a DaemonSet.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/nodelb/agent"
)

// runNodeAgent runs the agent until SIGTERM or SIGINT; then it hands its
// VIPs over and stops answering for them.
func runNodeAgent(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var kf kubeFlags
	kf.register(fs)
	var cfg agent.Config
	fs.StringVar(&cfg.NodeName, "node-name", os.Getenv("NODE_NAME"), "this agent's node (default $NODE_NAME)")
	fs.StringVar(&cfg.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the namespace of the NodeVIP objects, tfccm's (default $POD_NAMESPACE)")
	fs.StringVar(&cfg.GossipAddress, "gossip-address", os.Getenv("POD_IP"), "the address the agents gossip on (default $POD_IP, else the node's InternalIP)")
	fs.IntVar(&cfg.GossipPort, "gossip-port", 7946, "the port the agents gossip on (UDP and TCP)")
	fs.StringVar(&cfg.GossipKeyFile, "gossip-key-file", "", "a file holding the gossip key (16, 24 or 32 bytes); none gossips unencrypted")
	fs.DurationVar(&cfg.ProbeInterval, "probe-interval", 250*time.Millisecond, "how often each agent probes another: a node is declared gone about 4 probe intervals after it stops answering")
	fs.StringVar(&cfg.KubeletHealthz, "kubelet-healthz", "http://127.0.0.1:10248/healthz", "the kubelet's health URL: a node whose kubelet does not answer gives its VIPs up (\"\" does not check)")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", "", "serve /metrics (tfccm_node_vip_held) on this address, e.g. :9412 (\"\" serves none)")
	fs.StringVar(&cfg.FRRDir, "frr-dir", "", "BGP mode: the directory of the node's FRR vty sockets (the chart mounts the node's /var/run/frr); \"\" turns BGP mode off")
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	fs.Var(kfs.Lookup("v").Value, "v", "log verbosity: 0 holds and releases, 1 gossip membership changes, 2 every status write and join")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 || cfg.NodeName == "" || cfg.Namespace == "" {
		fmt.Fprintln(stderr, "usage: tfccm node-agent --node-name NODE --namespace TFCCM_NAMESPACE [--gossip-address A] [--gossip-key-file F] [--kubeconfig K]")
		return exitUsage
	}
	rc, err := kf.clientConfig().ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "tfccm node-agent: kubeconfig: %v\n", err)
		return exitError
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm node-agent: %v\n", err)
		return exitError
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm node-agent: %v\n", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := agent.Run(ctx, cfg, kube, dyn); err != nil {
		fmt.Fprintf(stderr, "tfccm node-agent: %v\n", err)
		return exitError
	}
	return exitOK
}
