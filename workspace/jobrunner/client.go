package jobrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// The stand-in for tofu (the engine's side of a run).

// IsClient reports whether this process was started by the engine as the
// stand-in for tofu (EnvConfig is set).
func IsClient() bool { return os.Getenv(EnvConfig) != "" }

// ClientMain is the stand-in's main: os.Args[1:] are tofu's arguments
// and the working directory is the workspace. It returns the exit code.
func ClientMain() int {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv(EnvConfig)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "tfccm job runner: %s: %v\n", EnvConfig, err)
		return 1
	}
	args := os.Args[1:]
	if command(args) == "version" || (len(args) > 0 && args[0] == "-version") {
		// terraform-exec asks the version before some commands: the
		// image's tofu is the runners' tofu.
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, EnvConfig+"=") {
				env = append(env, kv)
			}
		}
		err := syscall.Exec(cfg.Tofu, append([]string{cfg.Tofu}, args...), env)
		fmt.Fprintf(os.Stderr, "tfccm job runner: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rc, err := cfg.restConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tfccm job runner: %v\n", err)
		return 1
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tfccm job runner: %v\n", err)
		return 1
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tfccm job runner: %v\n", err)
		return 1
	}
	var res *result
	if cfg.Pool > 0 {
		res, err = RunPooled(ctx, rc, client, &cfg, dir, args, os.Environ())
	} else {
		res, err = Run(ctx, client, &cfg, dir, args, os.Environ())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tfccm job runner: workspace %s: %v\n", cfg.workspaceOf(dir), err)
		return 1
	}
	_, _ = os.Stdout.WriteString(res.Stdout)
	_, _ = os.Stderr.WriteString(res.Stderr)
	return res.Exit
}

// restConfig is how the stand-in reaches the apiserver.
func (c *Config) restConfig() (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if c.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		if c.KubeHost != "" {
			_ = os.Setenv("KUBERNETES_SERVICE_HOST", c.KubeHost)
			_ = os.Setenv("KUBERNETES_SERVICE_PORT", c.KubePort)
		}
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	rc.UserAgent = "tfccm-job-runner"
	return rc, nil
}

// Run runs tofu args for the workspace in dir as a Job and returns tofu's
// result; dir's carried files are then those the runner left.
func Run(ctx context.Context, client kubernetes.Interface, cfg *Config, dir string, args, env []string) (*result, error) {
	ws := cfg.workspaceOf(dir)
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if err := waitOthers(ctx, client, cfg, ws); err != nil {
		return nil, err
	}
	a := newArchive()
	if err := a.addDir(dir); err != nil {
		return nil, err
	}
	if err := newRequest(a, dir, args, env); err != nil {
		return nil, err
	}
	b, err := a.bytes()
	if err != nil {
		return nil, err
	}
	parts, err := split(b, "workspace "+ws)
	if err != nil {
		return nil, err
	}
	name := cfg.jobName(ws)
	job, key, err := start(ctx, client, cfg, name, ws, command(args), parts)
	if err != nil {
		return nil, err
	}
	jobs := client.BatchV1().Jobs(cfg.Namespace)
	defer func() {
		// Its pods and Secrets go with it (owner references).
		bg := metav1.DeletePropagationBackground
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = jobs.Delete(dctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	}()
	done, pods, err := waitJob(ctx, client, cfg, job.Name)
	var refusal *refusedError
	if errors.As(err, &refusal) {
		return &result{Exit: 1, Stderr: refusal.diagnostic()}, nil
	}
	if err != nil {
		return nil, err
	}
	res, err := readResult(ctx, client, cfg, dir, name, key)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &result{Exit: 1, Stderr: failure(ctx, client, cfg, done, pods, command(args))}, nil
	}
	if out := planOut(args); out != "" && (res.Exit == 0 || res.Exit == 2) && !exists(filepath.Join(dir, out)) {
		res.Stderr += fmt.Sprintf("\nError: Saved plan missing\n\nThe runner's tofu plan exited %d, but the plan it saves (%s) did not come back with its result.\n", res.Exit, out)
		res.Exit = 1
	}
	if res.Exit != 0 {
		// What happened to the pod goes first: tofu's own diagnostics
		// after it can be long (an interrupted apply reports every
		// resource it halted), and an Event keeps 1 KiB of the message.
		cause := evictedPods(pods)
		if oomKilled(pods) && !strings.Contains(res.Stderr, "Runner out of memory") {
			cause += "\n" + outOfMemory(command(args), limitOf(cfg), "")
		}
		res.Stderr = strings.TrimPrefix(cause, "\n") + res.Stderr
	}
	return res, nil
}

// start creates the Job (suspended), its input Secrets owned by it, and
// lets it run. It returns the Job and the key its result is sealed with
// (seal.go).
func start(ctx context.Context, client kubernetes.Interface, cfg *Config, name, ws, cmd string, parts [][]byte) (*batchv1.Job, string, error) {
	inputs := make([]string, len(parts))
	for i := range parts {
		inputs[i] = inName(name, i)
	}
	key, err := newResultKey()
	if err != nil {
		return nil, "", err
	}
	spec := cfg.jobSpec(name, ws, cmd, inputs)
	setResultKey(spec, key)
	yes := true
	spec.Spec.Suspend = &yes
	jobs := client.BatchV1().Jobs(cfg.Namespace)
	job, err := jobs.Create(ctx, spec, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("create Job %s/%s: %w", cfg.Namespace, name, err)
	}
	owner := jobOwner(name, string(job.UID))
	for i, p := range parts {
		s := partSecret(cfg.Namespace, inputs[i], name, cfg.labels(ws, ""), p, 0, owner)
		if _, err := client.CoreV1().Secrets(cfg.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			bg := metav1.DeletePropagationBackground
			_ = jobs.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{PropagationPolicy: &bg})
			return nil, "", fmt.Errorf("create input Secret %s/%s: %w", cfg.Namespace, inputs[i], err)
		}
	}
	job, err = jobs.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("start Job %s/%s: %w", cfg.Namespace, name, err)
	}
	return job, key, nil
}

// finished reports whether job ended (complete or failed).
func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitJob reads the Job whenever a watch of it sees a change (and every
// watchPolls polls, or every poll once the watch ended) until it ended,
// and returns it with its pods as last seen (podsEnded; a pod evicted
// meanwhile as read while the Job counted it terminating). When ctx ends
// (the engine interrupts the command), the Job is deleted in the
// foreground: its tofu gets SIGINT (the pod's grace period to save state
// and release its lock) and waitJob returns once the pod is gone.
func waitJob(ctx context.Context, client kubernetes.Interface, cfg *Config, name string) (*batchv1.Job, []corev1.Pod, error) {
	jobs := client.BatchV1().Jobs(cfg.Namespace)
	poll := cfg.Poll
	var changed <-chan watch.Event
	w, err := jobs.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err == nil {
		defer w.Stop()
		changed, poll = w.ResultChan(), watchPolls*cfg.Poll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	stopping := podsSeen{}
	for {
		// Read first: the Job may have ended before the watch began.
		job, err := jobs.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("Job %s/%s was deleted before it ended", cfg.Namespace, name)
		case err == nil && finished(job):
			return job, stopping.and(podsEnded(ctx, client, cfg, name)), nil
		case err == nil && job.Status.Terminating != nil && *job.Status.Terminating > 0:
			// Its pod is being deleted (evicted: a node drained): read
			// now, while the pod still says why. It is gone by the time
			// the Job ends.
			stopping.read(ctx, client, cfg, name)
		case err == nil:
			// No pod yet: the namespace may refuse it (refused.go).
			if err := refused(ctx, client, cfg, job); err != nil {
				return nil, nil, err
			}
		}
		// else running, or the apiserver briefly unreachable
		select {
		case <-ctx.Done():
			return nil, nil, interrupt(client, cfg, name)
		case _, ok := <-changed:
			if !ok {
				changed = nil
				t.Reset(cfg.Poll)
			}
		case <-t.C:
		}
	}
}

// podsSeen are a Job's pods as last read while being deleted, by name.
type podsSeen map[string]corev1.Pod

func (s podsSeen) read(ctx context.Context, client kubernetes.Interface, cfg *Config, job string) {
	pods, err := jobPods(ctx, client, cfg, job)
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		s[p.Name] = p
	}
}

// and is pods (read later) with the pods seen that are no longer among
// them.
func (s podsSeen) and(pods []corev1.Pod) []corev1.Pod {
	have := map[string]bool{}
	for _, p := range pods {
		have[p.Name] = true
	}
	names := make([]string, 0, len(s))
	for n := range s {
		if !have[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		pods = append(pods, s[n])
	}
	return pods
}

// watchPolls is how many polls waitJob waits between reads while its
// watch runs: a read then only backs up a watch event that went astray.
const watchPolls = 10

// podsEnded waits (up to the grace period) until no pod of Job name runs:
// a Job fails as soon as its pod is deleted, while the pod's tofu may
// still be saving its state and writing its result. It returns the pods
// as last seen before they were gone (why one failed: OOMKilled, evicted).
func podsEnded(ctx context.Context, client kubernetes.Interface, cfg *Config, name string) []corev1.Pod {
	ctx, cancel := context.WithTimeout(ctx, cfg.Grace+15*time.Second)
	defer cancel()
	var seen []corev1.Pod
	for ctx.Err() == nil {
		pods, err := jobPods(ctx, client, cfg, name)
		if err == nil && len(pods.Items) > 0 {
			seen = pods.Items
		}
		if err == nil && !running(pods.Items) {
			return seen
		}
		select {
		case <-ctx.Done():
		case <-time.After(cfg.Poll):
		}
	}
	return seen
}

func interrupt(client kubernetes.Interface, cfg *Config, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Grace+30*time.Second)
	defer cancel()
	fg := metav1.DeletePropagationForeground
	jobs := client.BatchV1().Jobs(cfg.Namespace)
	_ = jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	for ctx.Err() == nil {
		if _, err := jobs.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(cfg.Poll)
	}
	return errors.New("interrupted: its Job was deleted (tofu got SIGINT to save its state and release its lock)")
}

// waitOthers waits until no other Job of this controller runs for ws (one
// an earlier incarnation started) and deletes them: one workspace never
// runs twice at once. A Job still suspended never started: it is deleted.
// So is one whose pod was never scheduled (a node selector or toleration
// no node matched, fixed since by an upgrade): its tofu never ran, and it
// would otherwise hold the workspace until its active deadline. It is
// deleted in the foreground and waited for, so a pod scheduled meanwhile
// ends (tofu interrupted) before this run starts. So is one whose pod the
// namespace refused (refused.go): it never had one.
func waitOthers(ctx context.Context, client kubernetes.Interface, cfg *Config, ws string) error {
	jobs := client.BatchV1().Jobs(cfg.Namespace)
	bg := metav1.DeletePropagationBackground
	fg := metav1.DeletePropagationForeground
	for {
		list, err := jobs.List(ctx, metav1.ListOptions{LabelSelector: cfg.selector(ws)})
		if err != nil {
			return fmt.Errorf("list Jobs of workspace %s: %w", ws, err)
		}
		running := 0
		for i := range list.Items {
			j := &list.Items[i]
			if j.DeletionTimestamp == nil && (finished(j) || (j.Spec.Suspend != nil && *j.Spec.Suspend)) {
				_ = jobs.Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
				continue
			}
			if j.DeletionTimestamp == nil && neverScheduled(ctx, client, cfg, j) {
				if err := jobs.Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err == nil {
					klog.InfoS("Deleted an earlier runner Job whose pod was never scheduled", "job", j.Name, "workspace", ws)
				}
			}
			if j.DeletionTimestamp == nil && refused(ctx, client, cfg, j) != nil {
				if err := jobs.Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err == nil {
					klog.InfoS("Deleted an earlier runner Job whose pod the namespace refused", "job", j.Name, "workspace", ws)
				}
			}
			running++
		}
		if running == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %d earlier Job(s) of the workspace to end", running)
		case <-time.After(cfg.Poll):
		}
	}
}

// jobPods lists the pods of Job name.
func jobPods(ctx context.Context, client kubernetes.Interface, cfg *Config, name string) (*corev1.PodList, error) {
	return client.CoreV1().Pods(cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
}

// neverScheduled reports whether Job j has pods and none of them was ever
// bound to a node (and none ended): no tofu of it ever ran.
func neverScheduled(ctx context.Context, client kubernetes.Interface, cfg *Config, j *batchv1.Job) bool {
	if j.Status.Failed > 0 || j.Status.Succeeded > 0 {
		return false
	}
	pods, err := jobPods(ctx, client, cfg, j.Name)
	if err != nil || len(pods.Items) == 0 {
		return false
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
			return false
		}
	}
	return true
}

// readResult reads the result Secrets of Job name, checks them against
// the Job's key and syncs dir with the files in them; nil when the runner
// wrote none.
func readResult(ctx context.Context, client kubernetes.Interface, cfg *Config, dir, name, key string) (*result, error) {
	secrets := client.CoreV1().Secrets(cfg.Namespace)
	first, err := secrets.Get(ctx, outName(name, 0), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	n, err := strconv.Atoi(first.Annotations[AnnoParts])
	if err != nil || n < 1 || n > MaxParts {
		return nil, fmt.Errorf("result Secret %s: bad %s annotation", first.Name, AnnoParts)
	}
	b := append([]byte(nil), first.Data[partKey]...)
	for i := 1; i < n; i++ {
		s, err := secrets.Get(ctx, outName(name, i), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read result: %w", err)
		}
		b = append(b, s.Data[partKey]...)
	}
	if err := checkResult(key, first.Annotations[AnnoResultMAC], b); err != nil {
		return nil, fmt.Errorf("result of Job %s/%s: %w", cfg.Namespace, name, err)
	}
	return decodeResult(b, dir)
}

// decodeResult unpacks a result archive and syncs dir with its files
// (unless it came back without them).
func decodeResult(b []byte, dir string) (*result, error) {
	u, err := unpack(b)
	if err != nil {
		return nil, fmt.Errorf("the runner's result: %w", err)
	}
	var res result
	if err := json.Unmarshal(u.doc, &res); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	if res.NoFiles {
		return &res, nil
	}
	if err := u.syncDir(dir); err != nil {
		return nil, fmt.Errorf("write back the runner's files: %w", err)
	}
	return &res, nil
}
