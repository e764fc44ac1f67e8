package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

// installed is tfccm built and installed as a user installs it: tfccm,
// the kubectl plugin kubectl-tfccm and its completer
// kubectl_complete-tfccm (links to tfccm), on a PATH with the
// repository's kubectl. It returns that PATH.
func installed(t *testing.T) string {
	t.Helper()
	bin := repo.Build(t, "./cmd/tfccm")
	dir := filepath.Dir(bin)
	for _, link := range []string{"kubectl-tfccm", kubectlCompleteName} {
		if err := os.Symlink("tfccm", filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "kubectl")); err != nil {
		t.Fatalf("kubectl not found in bin/: run `make tools`")
	}
	return dir + ":" + filepath.Join(root, "bin") + ":/usr/bin:/bin"
}

const bashCompletion = "/usr/share/bash-completion/bash_completion"

// complete runs script in a non-interactive bash with bash-completion
// loaded, as a user's shell has it, and returns the candidates it
// printed, one per line.
func complete(t *testing.T, path, script string) []string {
	t.Helper()
	if _, err := os.Stat(bashCompletion); err != nil {
		t.Fatalf("%s not found: install Debian's bash-completion (make tools)", bashCompletion)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", "source "+bashCompletion+"\n"+script)
	cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, stderr.String())
	}
	return strings.Fields(string(out))
}

// TestCompletion loads the bash completion scripts in bash, as a user's
// shell does, and completes: `tfccm ser` to services, `tfccm services
// --kube` to its --kubeconfig flag, and `kubectl tfccm wor` through
// kubectl's own completion, which runs kubectl_complete-tfccm. zsh and
// fish get a script of their own.
func TestCompletion(t *testing.T) {
	path := installed(t)
	for _, tc := range []struct {
		name string
		line string // what the user typed before TAB
		want []string
	}{
		{"a subcommand", "tfccm ser", []string{"services"}},
		{"one of two candidates", "tfccm ap", []string{"approve"}},
		{"a subcommand's flag", "tfccm services --kube", []string{"--kubeconfig"}},
		{"the completion command", "tfccm completion ", []string{"bash", "fish", "powershell", "zsh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			words := strings.Fields(tc.line)
			if strings.HasSuffix(tc.line, " ") {
				words = append(words, "")
			}
			script := fmt.Sprintf(`source <(tfccm completion bash)
COMP_LINE=%q; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(%s); COMP_CWORD=%d
__start_tfccm 2>/dev/null
printf '%%s\n' "${COMPREPLY[@]}"`, tc.line, quoteWords(words), len(words)-1)
			got := complete(t, path, script)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
			}
		})
	}

	t.Run("kubectl tfccm", func(t *testing.T) {
		got := complete(t, path, `source <(kubectl completion bash)
COMP_LINE="kubectl tfccm wor"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(kubectl tfccm wor); COMP_CWORD=2
__start_kubectl 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`)
		if strings.Join(got, " ") != "workspaces" {
			t.Errorf("kubectl tfccm wor completes to %q, want workspaces", got)
		}
	})

	for _, shell := range []string{"zsh", "fish"} {
		cmd := exec.Command("kubectl", "tfccm", "completion", shell)
		cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir()}
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, []byte(shell)) || !bytes.Contains(out, []byte("__complete")) {
			t.Errorf("kubectl tfccm completion %s: %v\n%.300s", shell, err, out)
		}
	}
}

func quoteWords(words []string) string {
	var q []string
	for _, w := range words {
		q = append(q, fmt.Sprintf("%q", w))
	}
	return strings.Join(q, " ")
}
