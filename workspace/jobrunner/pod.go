package jobrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tfccm/tfccm/internal/tfenv"
)

// The runner pod's side (`tfccm run`): unpack, run tofu, write the result.

// runnerUID is the user tofu runs as in a runner pod: not the image's
// user (65532) but one without a passwd entry, so that tofu takes the
// user name of its locks from USER (the Job's name; see namePrefix). It
// owns the node's plugin cache directory; runnerGID is the image's group.
const (
	runnerUID = 65533
	runnerGID = 65532
)

// defaultCLIConfig is the image's OpenTofu CLI config (its provider
// mirror), used unless the engine passed one that exists in the pod.
const defaultCLIConfig = "/etc/tfccm/tofurc"

// PodMain is `tfccm run`: it returns the exit code of the runner itself
// (0 once the result is written, whatever tofu's exit code, unless the
// OOM killer struck meanwhile). A runner pod
// runs it twice (jobSpec): in the container "tofu" (no token unless the
// state backend needs one), which unpacks the inputs, runs tofu and
// writes the result archive to --result-file; then in the container
// "result" with --send-result, which writes that file into the result
// Secrets of the Job --result.
func PodMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prepare := fs.String("prepare-cache", "", "make this plugin cache directory the runner user's, and exit")
	inputs := fs.String("inputs", podInputs, "directory of the input parts")
	parts := fs.Int("parts", 1, "number of input parts")
	work := fs.String("work", podWork, "writable directory for the workspace")
	cache := fs.String("plugin-cache", podCache, "TF_PLUGIN_CACHE_DIR")
	resultFile := fs.String("result-file", "", "where to write the result archive")
	send := fs.String("send-result", "", "write the result archive in this file into the result Secrets of the Job --result, and exit")
	resultJob := fs.String("result", "", "the Job whose result Secrets to write (with --send-result)")
	tofu := fs.String("tofu", "/usr/local/bin/tofu", "the tofu binary")
	serve := fs.Bool("serve", false, "a pooled runner pod's main process: wait for requests through pods/exec (serve.go)")
	execOne := fs.Bool("exec", false, "run one pooled request: a request frame on stdin, the result frame on stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *serve:
		return serveMain(*work, stderr)
	case *execOne:
		return execMain(os.Stdin, stdout, stderr, *work, *cache, *tofu)
	case *prepare != "":
		if err := os.Chown(*prepare, runnerUID, runnerGID); err != nil {
			fmt.Fprintf(stderr, "tfccm run: %v\n", err)
			return 1
		}
		return 0
	case *send != "":
		if *resultJob == "" {
			fmt.Fprintln(stderr, "tfccm run: --send-result needs --result")
			return 2
		}
		return sendResult(*send, *resultJob, stderr)
	case *resultFile == "":
		fmt.Fprintln(stderr, "tfccm run: --result-file or --send-result is required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	b, err := readParts(*inputs, *parts)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm run: %v\n", err)
		return 1
	}
	ooms := oomKills()
	archive, res, err := runPacked(ctx, b, *work, *cache, *tofu)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm run: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "tfccm run: tofu exited %d\n", res.Exit)
	if err := os.WriteFile(*resultFile, archive, 0o600); err != nil {
		fmt.Fprintf(stderr, "tfccm run: write the result: %v\n", err)
		return 1
	}
	if ooms >= 0 && oomKills() > ooms {
		// The kubelet calls this container OOMKilled whatever its exit
		// code, and never starts the containers after an init container
		// it calls so: with exit 0 the pod would stay Pending and the
		// Job never end. Failing it ends the Job, and the CCM's reading
		// of the failed pod names the memory limit (failure.go).
		fmt.Fprintf(stderr, "tfccm run: the kernel's OOM killer struck in this container (tofu exited %d); exiting %d so that the pod fails\n", res.Exit, exitOutOfMemory)
		return exitOutOfMemory
	}
	return 0
}

// exitOutOfMemory is the runner's exit code when the OOM killer struck
// while tofu ran.
const exitOutOfMemory = 3

// sendResult writes the result archive in file into the result Secrets of
// Job job (the container "result").
func sendResult(file, job string, stderr io.Writer) int {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm run: read the result: %v\n", err)
		return 1
	}
	client, err := inClusterClient()
	if err == nil {
		err = writeResult(context.Background(), client, os.Getenv(envNamespace), job, os.Getenv(envJobUID), os.Getenv(envResultKey), b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tfccm run: write the result: %v\n", err)
		return 1
	}
	return 0
}

func readParts(dir string, n int) ([]byte, error) {
	var b []byte
	for i := range n {
		p, err := os.ReadFile(filepath.Join(dir, partFile(i)))
		if err != nil {
			return nil, err
		}
		b = append(b, p...)
	}
	return b, nil
}

// runPacked unpacks an input archive under work, runs tofu and returns
// the result archive (the workspace's files after the run and the
// result document) and the result.
func runPacked(ctx context.Context, in []byte, work, cache, tofu string) ([]byte, *result, error) {
	u, err := unpack(in)
	if err != nil {
		return nil, nil, err
	}
	var req request
	if err := json.Unmarshal(u.doc, &req); err != nil {
		return nil, nil, fmt.Errorf("request: %w", err)
	}
	ws, extra, home, tmp := filepath.Join(work, "ws"), filepath.Join(work, "extra"), filepath.Join(work, "home"), filepath.Join(work, "tmp")
	for _, d := range []string{ws, extra, home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, err
		}
	}
	if err := u.syncDir(ws); err != nil {
		return nil, nil, fmt.Errorf("unpack the workspace: %w", err)
	}
	// The engine's saved plan goes under .tfccm (-out).
	if err := os.MkdirAll(filepath.Join(ws, ".tfccm"), 0o700); err != nil {
		return nil, nil, err
	}
	for name, data := range u.extra {
		if err := os.WriteFile(filepath.Join(extra, filepath.Base(name)), data, 0o600); err != nil {
			return nil, nil, err
		}
	}
	env := podEnv(req.Env, home, tmp, cache)
	res := runTofu(ctx, tofu, ws, cache, env, req.resolve(extra))
	a := newArchive()
	if err := a.addDir(ws); err != nil {
		// A link out of the workspace (made by a provider) or a file
		// that cannot be read: tofu's output alone, and a failure that
		// names it; the engine's copy stays as it was.
		return noFiles(&result{Exit: 1, Stdout: res.Stdout, Stderr: res.Stderr + fmt.Sprintf("\nError: Runner result refused\n\nThe workspace the runner's tofu left cannot travel back: %v.\n", err)})
	}
	doc, err := json.Marshal(res)
	if err != nil {
		return nil, nil, err
	}
	if err := a.add(docName, 0o600, doc); err != nil {
		return nil, nil, err
	}
	out, err := a.bytes()
	if err != nil {
		return nil, nil, err
	}
	if len(out) > PartSize*MaxParts {
		// Too large to return the files: a failure that names the size.
		return noFiles(&result{Exit: 1, Stderr: fmt.Sprintf("Error: the runner's result packs to %.1f MiB, above the job runner's limit of %.1f MiB\n", float64(len(out))/(1<<20), float64(PartSize*MaxParts)/(1<<20))})
	}
	return out, res, nil
}

// noFiles is the result archive of res without the workspace's files.
func noFiles(res *result) ([]byte, *result, error) {
	res.NoFiles = true
	doc, err := json.Marshal(res)
	if err != nil {
		return nil, nil, err
	}
	a := newArchive()
	if err := a.add(docName, 0o600, doc); err != nil {
		return nil, nil, err
	}
	out, err := a.bytes()
	if err != nil {
		return nil, nil, err
	}
	return out, res, nil
}

// podEnv is tofu's environment in the pod: the engine's (credentials,
// encryption, TF_IN_AUTOMATION, ...) with this pod's paths.
func podEnv(req map[string]string, home, tmp, cache string) []string {
	// Providers' sockets go in the pod's own private tmp, not in the
	// engine's directory (tfenv.PluginSocketDir), which the pod lacks.
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp, "TF_PLUGIN_CACHE_DIR=" + cache, "USER=" + os.Getenv("USER"),
		tfenv.SocketDirVar + "=" + tmp}
	// The pod's own way to the apiserver (the kubernetes backend's
	// in_cluster_config), not the CCM's.
	for _, k := range []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for _, cli := range []string{req["TF_CLI_CONFIG_FILE"], defaultCLIConfig} {
		if cli != "" && exists(cli) {
			env = append(env, "TF_CLI_CONFIG_FILE="+cli)
			break
		}
	}
	for k, v := range req {
		switch k {
		case "PATH", "HOME", "TMPDIR", "TF_PLUGIN_CACHE_DIR", "TF_CLI_CONFIG_FILE", "USER", tfenv.SocketDirVar:
			continue
		}
		env = append(env, k+"="+v)
	}
	return env
}

// needsProviders: every command but init loads the configuration and so
// wants its providers installed (output and state too), which the pod
// links from the plugin cache first (init -backend=false) since they do
// not travel.
func needsProviders(cmd string) bool {
	return cmd != "init" && cmd != "version" && cmd != ""
}

// initialized reports whether init ran in workspace dir: its .terraform
// came along, or only its lock file did (a module without a backend or
// module calls, such as a health probe's copy, has nothing in .terraform
// but the providers, which do not travel).
func initialized(dir string) bool {
	return exists(filepath.Join(dir, ".terraform")) || exists(filepath.Join(dir, lockFile))
}

// runTofu runs tofu (after linking providers when the command needs them)
// and returns its result. SIGTERM (the pod deleted) reaches tofu as
// SIGINT: it saves its state and releases its lock. A failure while the
// kernel's OOM killer struck in the pod (tofu or its provider killed at
// the memory limit) says so, naming the setting to raise.
func runTofu(ctx context.Context, tofu, dir, cache string, env, args []string) *result {
	ooms := oomKills()
	res := tofuSteps(ctx, tofu, dir, cache, env, args)
	if res.Exit != 0 && ooms >= 0 && oomKills() > ooms {
		res.Stderr += "\n" + outOfMemory(command(args), podMemoryLimit(), "")
	}
	return res
}

// tofuSteps runs args in dir, the workspace's providers linked first
// when the command needs them: from the workspace's record without a tofu
// process when it fits, else by the linking init (providerlinks.go). After
// an init the record is written again.
func tofuSteps(ctx context.Context, tofu, dir, cache string, env, args []string) *result {
	cmd := command(args)
	if needsProviders(cmd) && initialized(dir) && !linkProviders(dir, cache) {
		res := tofuOnce(ctx, tofu, dir, env, []string{"init", "-input=false", "-backend=false", "-get=false", "-no-color"})
		if res.Exit != 0 {
			return res
		}
		recordLinks(dir, cache, res)
	}
	res := tofuOnce(ctx, tofu, dir, env, args)
	if cmd == "init" && res.Exit == 0 {
		recordLinks(dir, cache, res)
	}
	return res
}

// recordLinks writes dir's provider record after a successful init; a
// failure to write it only costs the next command a linking init, and is
// said in tofu's output.
func recordLinks(dir, cache string, res *result) {
	if err := recordProviderLinks(dir, cache); err != nil {
		res.Stderr += fmt.Sprintf("\nWarning: tfccm run: the providers' record was not written (%v); the next command links them with init\n", err)
	}
}

func tofuOnce(ctx context.Context, tofu, dir string, env, args []string) *result {
	var stdout, stderr limited
	cmd := exec.Command(tofu, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return &result{Exit: 1, Stderr: fmt.Sprintf("Error: start tofu: %v\n", err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGINT)
		err = <-done
	}
	res := &result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
		if res.Exit < 0 {
			res.Exit = 1
			res.Stderr += fmt.Sprintf("\nError: tofu was killed (%v)\n", ee)
		}
	default:
		res.Exit = 1
		res.Stderr += fmt.Sprintf("\nError: %v\n", err)
	}
	return res
}

// limited keeps the first maxOutput bytes written to it.
type limited struct{ bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if room := maxOutput - l.Len(); room > 0 {
		if len(p) > room {
			l.Buffer.Write(p[:room])
		} else {
			l.Buffer.Write(p)
		}
	}
	return len(p), nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func inClusterClient() (kubernetes.Interface, error) {
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "tfccm-runner"
	return kubernetes.NewForConfig(rc)
}

// writeResult writes the result archive into Secrets owned by the Job:
// parts 1..n-1 first, part 0 (which names the count and carries the
// archive's HMAC under key, seal.go) last, so that part 0 means the result
// is complete.
func writeResult(ctx context.Context, client kubernetes.Interface, ns, job, uid, key string, b []byte) error {
	parts, err := split(b, "the result")
	if err != nil {
		return err
	}
	var owner *metav1.OwnerReference
	if uid != "" {
		owner = jobOwner(job, uid)
	}
	labels := map[string]string{LabelRunner: "job", "app.kubernetes.io/managed-by": "tfccm"}
	for i := len(parts) - 1; i >= 0; i-- {
		n := 0
		if i == 0 {
			n = len(parts)
		}
		s := partSecret(ns, outName(job, i), job, labels, parts[i], n, owner)
		if i == 0 {
			s.Annotations[AnnoResultMAC] = resultMAC(key, b)
		}
		var err error
		for attempt := range 5 {
			if _, err = client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
				err = nil
				break
			}
			time.Sleep(time.Duration(attempt+1) * time.Second)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
