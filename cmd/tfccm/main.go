package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfccm/tfccm/internal/keyserver"
)

// command is one subcommand: it returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is the one registry of subcommands: adding a command is one
// line here (and its run function in a file named after it).
var commands = map[string]command{
	// completion registers itself (completion.go).
	"approve":    {"list the plans awaiting approval (review mode), show one and approve it on its ConfigMap in tfccm's namespace (approvers)", runApprove},
	"convert":    {"convert metallb: MetalLB's IPAddressPools (and the L2Advertisements announcing them) as tfccm AddressPool manifests, from a cluster or a YAML dump", runConvert},
	"lbhost":     {"prepare and check LB hosts of the baremetal set: lbhost prepare prints the script that prepares a host, lbhost check names what is missing and its fix", runLBHost},
	"node-agent": {"(on a node, as the chart's DaemonSet) hold and announce the node-mode VIPs this node is chosen for, and report them on their NodeVIP objects", runNodeAgent},
	"plan":       {"fleet plan: every load balancer and the routes planned read-only with candidate templates/config", runPlan},
	"render":     {"render a load balancer or routes workspace", runRender},
	"run":        {"(inside a runner pod) run one tofu command of a workspace for the job runner", runRun},
	"services":   {"list the LoadBalancer Services tfccm serves; --uninstall refuse|delete guards helm uninstall", runServices},
	"status":     {"from a workstation: the leader (pod, since when, version), Services by phase and why not served, plans awaiting approval", runStatus},
	"takeover":   {"take Services over from MetalLB (compat { metallb_takeover = \"prepare\" }): list them (or --all) in tfccm's ConfigMap tfccm-takeover, and their prepared load balancers announce their addresses (admins)", runTakeover},
	"state":      {"query the instances tfccm reads from Terraform state", runState},
	"unlock":     {"show who holds a workspace's state lock and release it when its holder is gone", runUnlock},
	"validate":   {"check template sets or modules against the contract", runValidate},
	"workspaces": {"list the workspaces in work_dir with their phase, Service and (--locks) state lock", runWorkspaces},
	"version":    {"print tfccm's version", runVersion},
}

func main() {
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == kubectlCompleteName {
		args = append([]string{completeCommand}, args...) // kubectl completing `kubectl tfccm ...`
	}
	rc := run(args, os.Stdout, os.Stderr)
	keyserver.Shutdown() // tfccm_pbkdf2's socket, if a command loaded one
	os.Exit(rc)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the input is wrong (invalid template, bad object, render error)
	exitUsage = 2
)

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if strings.HasPrefix(args[0], completeCommand) { // __complete, __completeNoDesc
		return runCompletion(args, stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tfccm: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	prog := "tfccm"
	if filepath.Base(os.Args[0]) == "kubectl-tfccm" {
		prog = "kubectl tfccm" // installed as a kubectl plugin
	}
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", prog)
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun %s <command> -h for its flags.\n", prog)
}
