package main

// Shell completion. tfccm's subcommands are plain flag sets in the
// commands registry; cobra, which kubectl uses too, writes the bash, zsh
// and fish scripts and answers their `__complete` callbacks from a command
// tree built here from that registry: the subcommand names with their
// summaries and, after a subcommand, its flags (read from the subcommand's
// own -h, so they are never declared twice). kubectl completes a plugin's
// arguments by running `kubectl_complete-tfccm` (kubectl 1.26+): installed
// as a link to tfccm under that name, it answers as `tfccm __complete`.

import (
	"bytes"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// kubectlCompleteName is the name kubectl runs to complete `kubectl tfccm`.
const kubectlCompleteName = "kubectl_complete-tfccm"

// completeCommand is cobra's hidden callback of the completion scripts.
const completeCommand = cobra.ShellCompRequestCmd

// The completion command registers itself: its run function reads the
// registry, which Go's initialization order forbids in the registry's own
// literal.
func init() {
	commands["completion"] = command{"print a shell completion script: tfccm completion bash|zsh|fish (kubectl tfccm completion too)",
		func(args []string, stdout, stderr io.Writer) int {
			return runCompletion(append([]string{"completion"}, args...), stdout, stderr)
		}}
}

// verbOf is the first word a subcommand's flags follow; noFlags are the
// subcommands whose flags are not offered (run is the runner pod's).
var (
	verbOf  = map[string]string{"state": "query", "lbhost": "check"}
	noFlags = map[string]bool{"run": true, "completion": true}
)

// runCompletion answers `tfccm completion bash|zsh|fish` (the script) and
// the scripts' hidden `tfccm __complete ARGS` callbacks; args start with
// the command's name.
func runCompletion(args []string, stdout, stderr io.Writer) int {
	root := completionTree()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		return exitUsage
	}
	return exitOK
}

// completionTree is tfccm's command tree for cobra's completion: one
// child per registered subcommand, each completing its flags.
func completionTree() *cobra.Command {
	root := &cobra.Command{
		Use:           "tfccm",
		Short:         "tfccm's CLI",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "completion" {
			continue // cobra adds its own, with one child per shell
		}
		name := n
		root.AddCommand(&cobra.Command{
			Use:                name,
			Short:              commands[name].summary,
			DisableFlagParsing: true,
			ValidArgsFunction: func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if !strings.HasPrefix(toComplete, "-") || noFlags[name] {
					return nil, cobra.ShellCompDirectiveDefault // file names
				}
				var match []string
				for _, f := range flagsOf(name) {
					if strings.HasPrefix(f, toComplete) {
						match = append(match, f)
					}
				}
				return match, cobra.ShellCompDirectiveNoFileComp
			},
			Run: func(*cobra.Command, []string) {},
		})
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// flagLine is a flag in the standard library's -h output: "  -name type".
var flagLine = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// flagsOf is the subcommand's flags, as --name, from its own usage
// (every subcommand parses its flags before doing anything, so -h only
// prints them).
func flagsOf(name string) []string {
	var usage bytes.Buffer
	args := []string{"-h"}
	if v := verbOf[name]; v != "" {
		args = []string{v, "-h"}
	}
	commands[name].run(args, io.Discard, &usage)
	var out []string
	for _, m := range flagLine.FindAllStringSubmatch(usage.String(), -1) {
		out = append(out, "--"+m[1])
	}
	return out
}
