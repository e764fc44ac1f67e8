package jobrunner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// request is what a runner pod is asked to run: tofu's arguments and
// environment, and the arguments that name files shipped as extra files.
type request struct {
	Args []string          `json:"args"`
	Env  map[string]string `json:"env"`
	// Files: argument index → extra file name; the argument is
	// "<prefix>=<path>" and the pod puts its own path of the file there.
	Files map[int]string `json:"files,omitempty"`
}

// result is what a runner pod reports: tofu's exit code and output, and
// whether the workspace's files came back with it.
type result struct {
	Exit   int    `json:"exit"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// NoFiles: the files were left out (too large to return); the
	// engine's copy of the workspace stays as it was.
	NoFiles bool `json:"noFiles,omitempty"`
}

// droppedEnv are variables of the stand-in's environment a runner pod
// does not get: the stand-in's own, the engine's process markers and what
// the pod sets itself (paths of this machine, Kubernetes access).
var droppedEnv = map[string]bool{
	EnvConfig: true, "TFCCM_RUN": true, "TFCCM_WORKSPACE": true,
	"PATH": true, "HOME": true, "PWD": true, "TF_PLUGIN_CACHE_DIR": true, "TMPDIR": true,
	"KUBECONFIG": true, "KUBERNETES_SERVICE_HOST": true, "KUBERNETES_SERVICE_PORT": true,
}

// newRequest builds the request for tofu args run in dir with env
// (KEY=VALUE entries), and adds to a the files args name by absolute path
// outside dir (-backend-config=, -var-file=: tfccm keeps secret settings
// there).
func newRequest(a *archive, dir string, args, env []string) error {
	req := request{Args: append([]string(nil), args...), Env: map[string]string{}, Files: map[int]string{}}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && !droppedEnv[k] && !strings.HasPrefix(k, "KUBERNETES_") {
			req.Env[k] = v
		}
	}
	for i, arg := range args {
		_, p, ok := strings.Cut(arg, "=")
		if !ok || !strings.HasPrefix(arg, "-") || !filepath.IsAbs(p) {
			continue
		}
		if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			req.Args[i] = strings.TrimSuffix(arg, p) + filepath.ToSlash(rel)
			continue
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", arg, err)
		}
		name := fmt.Sprintf("%d", i)
		if err := a.add(extraPrefix+name, 0o600, b); err != nil {
			return err
		}
		req.Files[i] = name
	}
	doc, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return a.add(docName, 0o600, doc)
}

// resolve is the request's arguments with the pod's paths of its extra
// files (written under extraDir).
func (r *request) resolve(extraDir string) []string {
	args := append([]string(nil), r.Args...)
	idx := make([]int, 0, len(r.Files))
	for i := range r.Files {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		if i < 0 || i >= len(args) {
			continue
		}
		flag, _, _ := strings.Cut(args[i], "=")
		args[i] = flag + "=" + filepath.Join(extraDir, r.Files[i])
	}
	return args
}

// command is tofu's subcommand in args (the first argument not a flag).
func command(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// planOut is the plan file a plan in args saves (-out=, relative to the
// workspace), "" for none.
func planOut(args []string) string {
	if command(args) != "plan" {
		return ""
	}
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "-out="); ok && !filepath.IsAbs(p) {
			return p
		}
	}
	return ""
}
