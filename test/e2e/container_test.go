package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// builtImage runs `make image` into a temporary directory removed when
// the test ends and returns it (oci/, tfccm.tar, digest).
func builtImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_DIR="+dir, "IMAGE=tfccm.test/tfccm:e2e")
	cmd.Dir = repoRoot(t)
	cmd.Env = withoutMake(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	return dir
}

// withoutMake drops an enclosing make's job server settings.
func withoutMake(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "MAKEFLAGS=") && !strings.HasPrefix(e, "MFLAGS=") && !strings.HasPrefix(e, "MAKELEVEL=") {
			out = append(out, e)
		}
	}
	return out
}

// container is a container run by runc from an OCI bundle.
type container struct {
	id, bundle, log string
	cmd             *exec.Cmd
	done            chan struct{}
}

func (c *container) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// proc reads /proc/<container init pid>/name.
func (c *container) proc(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("runc", "state", c.id).Output()
	if err != nil {
		t.Fatalf("runc state: %v", err)
	}
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.Pid == 0 {
		t.Fatalf("runc state %s: %v", out, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", st.Pid, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (c *container) output() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// podRun is what a kubelet would give the chart's pod on this machine: the
// container spec of the Deployment, the ConfigMap volumes' files, emptyDirs
// and the ServiceAccount token.
// containerPodName is the pod name runPod's container sees (POD_NAME).
const containerPodName = "tfccm-container"

type podRun struct {
	spec      corev1.PodSpec
	configMap map[string]*corev1.ConfigMap
	token     string
	caFile    string
	apiHost   string
	apiPort   string
	// extra mounts and settings the local cloud needs (see below).
	mounts []ociMount
	caps   []string
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type,omitempty"`
	Source      string   `json:"source,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// runPod unpacks the image into a bundle, translates the pod's container
// into an OCI runtime config and runs it with runc on the host network.
func runPod(t *testing.T, imgDir string, p podRun) *container {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc not found: run `make tools` (installs Debian's runc): %v", err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(imgDir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("OCI layout: %v %v", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	bundle := t.TempDir()
	if err := image.Unpack(img, filepath.Join(bundle, "rootfs")); err != nil {
		t.Fatal(err)
	}

	ctr := p.spec.Containers[0]
	psc := p.spec.SecurityContext
	uid, gid := uint32(0), uint32(0)
	if psc != nil && psc.RunAsUser != nil {
		uid = uint32(*psc.RunAsUser)
	}
	if psc != nil && psc.RunAsGroup != nil {
		gid = uint32(*psc.RunAsGroup)
	}
	var fsGroup *int64
	if psc != nil {
		fsGroup = psc.FSGroup
	}
	env := append([]string{}, cf.Config.Env...)
	env = append(env, "KUBERNETES_SERVICE_HOST="+p.apiHost, "KUBERNETES_SERVICE_PORT="+p.apiPort)
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env = append(env, e.Name+"="+containerPodName) // the downward API's pod name
		case e.ValueFrom != nil:
			t.Fatalf("env %s: valueFrom is not supported by this test", e.Name)
		default:
			env = append(env, e.Name+"="+e.Value)
		}
	}

	// Volumes, as the kubelet would lay them out.
	vols := map[string]string{}
	for _, v := range p.spec.Volumes {
		dir := filepath.Join(bundle, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.ConfigMap != nil:
			cm := p.configMap[v.ConfigMap.Name]
			if cm == nil {
				if v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
					break
				}
				t.Fatalf("volume %s: ConfigMap %s not found", v.Name, v.ConfigMap.Name)
			}
			items := v.ConfigMap.Items
			if len(items) == 0 {
				for k := range cm.Data {
					items = append(items, corev1.KeyToPath{Key: k, Path: k})
				}
			}
			for _, it := range items {
				f := filepath.Join(dir, it.Path)
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(cm.Data[it.Key]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		case v.EmptyDir != nil:
			// Writable by the pod's fsGroup, like the kubelet's emptyDir.
			mode := os.FileMode(0o777)
			if fsGroup != nil {
				if err := os.Chown(dir, 0, int(*fsGroup)); err != nil {
					t.Fatal(err)
				}
				mode = 0o775 | os.ModeSetgid
			}
			if err := os.Chmod(dir, mode|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("volume %s: only ConfigMap and emptyDir volumes are supported by this test", v.Name)
		}
		vols[v.Name] = dir
	}
	mounts := []ociMount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		// Host network: the host's resolver configuration.
		{Destination: "/etc/hosts", Type: "bind", Source: "/etc/hosts", Options: []string{"rbind", "ro"}},
		{Destination: "/etc/resolv.conf", Type: "bind", Source: "/etc/resolv.conf", Options: []string{"rbind", "ro"}},
	}
	for _, vm := range ctr.VolumeMounts {
		src, ok := vols[vm.Name]
		if !ok {
			t.Fatalf("volumeMount %s: no volume", vm.Name)
		}
		opts := []string{"rbind", "rw"}
		if vm.ReadOnly {
			opts = []string{"rbind", "ro"}
		}
		mounts = append(mounts, ociMount{Destination: vm.MountPath, Type: "bind", Source: src, Options: opts})
	}
	// The ServiceAccount's projected token, CA and namespace.
	sa := filepath.Join(bundle, "volumes", "serviceaccount")
	if err := os.MkdirAll(sa, 0o755); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"token": p.token, "ca.crt": string(ca), "namespace": "kube-system"} {
		if err := os.WriteFile(filepath.Join(sa, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mounts = append(mounts, ociMount{Destination: "/var/run/secrets/kubernetes.io/serviceaccount", Type: "bind", Source: sa, Options: []string{"rbind", "ro"}})
	mounts = append(mounts, p.mounts...)

	sc := ctr.SecurityContext
	readonly := sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	noNewPrivs := sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	caps := []string{}
	if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("the chart's container does not drop ALL capabilities: %+v", sc)
	}
	caps = append(caps, p.caps...)
	args := append(append([]string{}, cf.Config.Entrypoint...), ctr.Args...)
	if len(ctr.Command) > 0 {
		args = append(append([]string{}, ctr.Command...), ctr.Args...)
	}
	var addGids []uint32
	if fsGroup != nil {
		addGids = append(addGids, uint32(*fsGroup))
	}
	config := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal":        false,
			"user":            map[string]any{"uid": uid, "gid": gid, "additionalGids": addGids},
			"args":            args,
			"env":             env,
			"cwd":             cf.Config.WorkingDir,
			"noNewPrivileges": noNewPrivs,
			"capabilities": map[string]any{
				"bounding": caps, "effective": caps, "permitted": caps, "inheritable": caps, "ambient": caps,
			},
		},
		"root":     map[string]any{"path": "rootfs", "readonly": readonly},
		"hostname": "tfccm",
		"mounts":   mounts,
		"linux": map[string]any{
			// No network namespace: host network (the control plane and
			// the local cloud listen on the host). No PID namespace: the
			// local cloud's scripts find HAProxy by its pid.
			"namespaces":    []map[string]string{{"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"maskedPaths":   []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	b, err := json.MarshalIndent(config, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	c := &container{id: fmt.Sprintf("tfccm-e2e-%d", os.Getpid()), bundle: bundle, log: filepath.Join(t.TempDir(), "container.log"), done: make(chan struct{})}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(runc, "run", "--bundle", bundle, c.id)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		// SIGTERM first: tofu gets SIGINT and the CCM releases its Lease.
		_ = exec.Command(runc, "kill", c.id, "TERM").Run()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = exec.Command(runc, "kill", c.id, "KILL").Run()
			<-c.done
		}
		if out, err := exec.Command(runc, "delete", "--force", c.id).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("does not exist")) {
			t.Errorf("runc delete: %v: %s", err, out)
		}
		if t.Failed() {
			t.Logf("container log, last 80 lines:\n%s", tail(c.log, 80))
		}
	})
	return c
}

// TestContainerServesLoadBalancer runs the image built by `make image` in
// a real OCI runtime (runc) with the Helm chart's configuration — the
// chart installed into the local control plane, its Deployment's
// container (arguments, environment, volumes, user, read-only root file
// system, no capabilities), its cloud config ConfigMap with the kubernetes
// state backend, and its ServiceAccount's token as the pod's in-cluster
// credentials — and checks that it serves a LoadBalancer Service of the
// local cloud: traffic to the VIP reaches the nodes, the state is a Secret
// written through the chart's RBAC, and deleting the Service destroys it.
//
// The local cloud is the host's own network namespaces and HAProxy, driven
// by the local template's scripts: for those alone the container gets the
// host's tools (read-only), the host PID namespace and the capabilities to
// enter network namespaces and signal HAProxy. A template for a real cloud
// talks to its API and needs none of it.
func TestContainerServesLoadBalancer(t *testing.T) {
	imgDir := builtImage(t)
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	admin := cluster.Client()
	ctx := context.Background()

	serveNodes(t, cloud, 30090)
	createNode(t, admin, cloud, "node-a")
	createNode(t, admin, cloud, "node-b")

	port := freePort(t)
	values := fmt.Sprintf(`image:
  repository: tfccm.test/tfccm
  tag: e2e
replicas: 1
securePort: %d
cloudConfig:
  clusterName: e2e
  templateSet: local
  inline: |
    load_balancer {
      settings = %s
    }
`, port, strings.ReplaceAll(harness.HCLObject(cloud.LBSettings()), "\n", "\n    "))
	sa := helmInstall(t, cluster, values+noHookPods)
	_, token := serviceAccountKubeconfig(t, cluster, sa)

	dep, err := admin.AppsV1().Deployments("kube-system").Get(ctx, "tfccm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Template.Spec.ServiceAccountName != sa {
		t.Fatalf("the Deployment runs as %q, not the chart's ServiceAccount %q", dep.Spec.Template.Spec.ServiceAccountName, sa)
	}
	cms, err := admin.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.ConfigMap{}
	for i := range cms.Items {
		byName[cms.Items[i].Name] = &cms.Items[i]
	}
	api, err := url.Parse(cluster.Server())
	if err != nil {
		t.Fatal(err)
	}
	state := cloud.StateDir
	ro := []string{"rbind", "ro"}
	c := runPod(t, imgDir, podRun{
		spec:      podSpecOf(dep),
		configMap: byName,
		token:     token,
		caFile:    cluster.RESTConfig().TLSClientConfig.CAFile,
		apiHost:   api.Hostname(),
		apiPort:   api.Port(),
		mounts: []ociMount{
			{Destination: "/usr/bin", Type: "bind", Source: "/usr/bin", Options: ro},
			{Destination: "/usr/sbin", Type: "bind", Source: "/usr/sbin", Options: ro},
			{Destination: "/usr/lib", Type: "bind", Source: "/usr/lib", Options: ro},
			{Destination: "/bin", Type: "bind", Source: "/usr/bin", Options: ro},
			{Destination: "/sbin", Type: "bind", Source: "/usr/sbin", Options: ro},
			{Destination: "/lib", Type: "bind", Source: "/usr/lib", Options: ro},
			{Destination: "/lib64", Type: "bind", Source: "/usr/lib64", Options: ro},
			{Destination: "/etc/ld.so.cache", Type: "bind", Source: "/etc/ld.so.cache", Options: ro},
			{Destination: "/etc/alternatives", Type: "bind", Source: "/etc/alternatives", Options: ro},
			{Destination: "/run/netns", Type: "bind", Source: "/run/netns", Options: []string{"rbind", "rslave", "ro"}},
			{Destination: state, Type: "bind", Source: state, Options: []string{"rbind", "rw"}},
		},
		caps: []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_CHOWN"},
	})

	eventually(t, time.Minute, "the containerized CCM takes the leader Lease", func(ctx context.Context) error {
		if c.exited() {
			return fmt.Errorf("container exited: %s", tail(c.log, 20))
		}
		l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || !strings.HasPrefix(*l.Spec.HolderIdentity, "tfccm_") {
			return fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		return nil
	})

	// The chart's user and read-only root file system are in force.
	status, mountinfo := c.proc(t, "status"), c.proc(t, "mountinfo")
	if !regexp.MustCompile(`(?m)^Uid:\s+65532\s+65532`).MatchString(status) {
		t.Errorf("the CCM does not run as the chart's user 65532:\n%s", status)
	}
	if !regexp.MustCompile(`(?m)^\S+ \S+ \S+ \S+ / ro[, ]`).MatchString(mountinfo) {
		t.Errorf("the root file system is not read-only:\n%s", mountinfo)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30090, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip := waitVIP(t, admin, "web")
	t.Logf("VIP %s served by the containerized CCM", vip)
	backendsAre(t, vip, 80, "node-a", "node-b")

	// The chart's state namespace of its own (<release>-state).
	secrets, err := admin.CoreV1().Secrets("tfccm-state").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The load balancer's state, and the catalog's (docs/how-it-works.md):
	// its default workspace and the load balancer's entry.
	var stateSecrets, catalog []string
	for _, s := range secrets.Items {
		switch {
		case strings.HasSuffix(s.Name, "-tfccm-catalog"):
			catalog = append(catalog, s.Name)
		case strings.HasPrefix(s.Name, "tfstate-"):
			stateSecrets = append(stateSecrets, s.Name)
		}
	}
	if len(stateSecrets) != 1 {
		t.Errorf("state Secrets in tfccm-state: %v, want one (kubernetes backend through the chart's RBAC)", stateSecrets)
	}
	if len(catalog) != 2 {
		t.Errorf("catalog Secrets in tfccm-state: %v, want the catalog's default workspace and the load balancer's entry", catalog)
	}

	if err := admin.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "Service deleted after its load balancer is destroyed", func(ctx context.Context) error {
		_, err := admin.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	if _, err := get(vip, 80); err == nil {
		t.Errorf("the VIP %s still answers after the Service is gone", vip)
	}
	if out := c.output(); strings.Contains(out, "is forbidden") {
		i := strings.Index(out, "is forbidden")
		t.Errorf("the containerized CCM hit a permission the chart does not grant: ...%s", out[max(0, i-300):min(len(out), i+200)])
	}
}

func podSpecOf(d *appsv1.Deployment) corev1.PodSpec { return d.Spec.Template.Spec }

// TestImageProviderMirror builds the image with `make image PROVIDERS=dir`
// and runs its tofu, as the chart's user with a read-only root file system
// and no capabilities, on a module that needs a provider only the mirror
// has: init installs it from the image's mirror through the image's CLI
// config, without asking the (unreachable) registry.
func TestImageProviderMirror(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mirror", "example.com/acme/widget/1.2.0/linux_amd64/terraform-provider-widget_v1.2.0")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	imgDir := filepath.Join(dir, "image")
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_DIR="+imgDir, "IMAGE=tfccm.test/tfccm:providers", "PROVIDERS="+filepath.Join(dir, "mirror"))
	cmd.Dir = repoRoot(t)
	cmd.Env = withoutMake(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image PROVIDERS=...: %v\n%s", err, out)
	}
	yes, no := true, false
	user := int64(image.UID)
	spec := corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &user, RunAsGroup: &user, FSGroup: &user},
		Containers: []corev1.Container{{
			Command: []string{image.BinDir + "/tofu", "-chdir=" + image.WorkDir + "/mod", "init", "-no-color", "-input=false", "-from-module=/etc/mod"},
			SecurityContext: &corev1.SecurityContext{
				ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "mod", MountPath: "/etc/mod", ReadOnly: true}, {Name: "work", MountPath: image.WorkDir}, {Name: "modwork", MountPath: image.WorkDir + "/mod"}, {Name: "tmp", MountPath: "/tmp"}},
		}},
		Volumes: []corev1.Volume{
			{Name: "mod", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "mod"}}}},
			{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "modwork", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	mod := &corev1.ConfigMap{Data: map[string]string{"main.tf": "terraform {\n  required_providers {\n    widget = { source = \"example.com/acme/widget\", version = \"1.2.0\" }\n  }\n}\n"}}
	ca := writeFile(t, dir, "ca.crt", "")
	c := runPod(t, imgDir, podRun{spec: spec, configMap: map[string]*corev1.ConfigMap{"mod": mod}, caFile: ca, apiHost: "127.0.0.1", apiPort: "1"})
	select {
	case <-c.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("tofu init did not finish: %s", c.output())
	}
	out := c.output()
	if !strings.Contains(out, "Installed example.com/acme/widget v1.2.0") || !strings.Contains(out, "OpenTofu has been successfully initialized") {
		t.Errorf("tofu init in the image did not install the mirrored provider:\n%s", out)
	}
	if c.cmd.ProcessState == nil || !c.cmd.ProcessState.Success() {
		t.Errorf("tofu init exited with %v", c.cmd.ProcessState)
	}
}
