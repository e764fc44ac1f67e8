package nodes

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

const (
	// tfccmClass is tfccm's default load balancer class.
	tfccmClass = "tfccm.io/terraform"
	// metallbClass is the class MetalLB's controller serves (--lb-class).
	metallbClass = "metallb.io/metallb"
	// metallbPool is MetalLB's IPAddressPool: a documentation range, far
	// from the local cloud's VIP pools. MetalLB runs without speakers, so
	// it assigns these addresses but nothing announces them.
	metallbPool = "192.0.2.0/28"
	// The finalizers of tfccm's two paths.
	serviceControllerFinalizer = "service.kubernetes.io/load-balancer-cleanup"
	classFinalizer             = "tfccm.io/load-balancer-cleanup"
)

// TestLBClassesOnRealNodes runs tfccm (class-less
// Services through the service controller, tfccm.io/terraform through its
// class loop) beside MetalLB's controller (built from the module proxy,
// serving its own class) on two real nodes. Every Service is served by
// exactly one of them (its address from that one's pool, its finalizer and
// Events from that one only; a Service of a third class by neither), and
// switching a Service's class (type NodePort, then LoadBalancer with the
// new class: the field is immutable otherwise) moves it: the old load
// balancer is destroyed, the new one applied; the gap is logged.
func TestLBClassesOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	c := ForTest(t, Options{Nodes: 2})
	client := c.Client()
	ccm := startTfccm(t, c)
	ccmLog := func() string { return ccm.LogTail(60) }
	mlbLog, stopMetalLB := startMetalLB(t, c, metallbClass)
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitNodesReady(t, client)
	runPod(t, client, "web", "node-a")
	tfccmPool := netip.MustParsePrefix(c.Cloud.VIPPool)
	mlbPool := netip.MustParsePrefix(metallbPool)

	// Four Services: class-less, tfccm's class, MetalLB's, nobody's. The
	// class-less one also carries the annotation that was never real.
	nobody := "example.com/nobody"
	services := map[string]*string{"plain": nil, "classed": ptrTo(tfccmClass), "metallb": ptrTo(metallbClass), "nobody": &nobody}
	for name, class := range services {
		svc := classService(name, class)
		if name == "plain" {
			svc.Annotations = map[string]string{"service.kubernetes.io/load-balancer-class": metallbClass}
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	owners := map[string]string{"plain": "tfccm", "classed": "tfccm", "metallb": "metallb"}
	ips := map[string]string{}
	for name, owner := range owners {
		ip, err := harness.WaitForIngress(ctx, client, "default", name, 3*time.Minute)
		if err != nil {
			t.Fatalf("%v\ntfccm log:\n%s\nMetalLB log:\n%s", err, ccmLog(), mlbLog())
		}
		ips[name] = ip
		pool := map[string]netip.Prefix{"tfccm": tfccmPool, "metallb": mlbPool}[owner]
		if !pool.Contains(netip.MustParseAddr(ip)) {
			t.Errorf("%s got %s, outside %s's pool %s", name, ip, owner, pool)
		}
	}
	for _, name := range []string{"plain", "classed"} {
		waitGET(t, ips[name], time.Minute)
	}
	// Exactly one owner each: finalizers, Events, tfccm's conditions.
	checkOwner(t, client, "plain", "tfccm", serviceControllerFinalizer)
	checkOwner(t, client, "classed", "tfccm", classFinalizer)
	checkOwner(t, client, "metallb", "metallb", "")
	checkOwner(t, client, "nobody", "", "")
	if svc := getService(t, client, "nobody"); len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a Service of a class nobody serves got %v", svc.Status.LoadBalancer.Ingress)
	}
	waitEvent(t, client, "plain", "TerraformClassAnnotationIgnored", "spec.loadBalancerClass")
	for name, owner := range owners {
		checkEventsOnlyFrom(t, client, name, owner)
	}
	checkEventsOnlyFrom(t, client, "nobody", "")

	// The class cannot change on a LoadBalancer Service.
	svc := getService(t, client, "classed")
	svc.Spec.LoadBalancerClass = ptrTo(metallbClass)
	if _, err := client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "may not change once set") {
		t.Errorf("changing the class of a LoadBalancer Service: %v, want the API's refusal", err)
	}

	// tfccm's class -> MetalLB: tfccm destroys its load balancer (its VIP
	// stops answering), MetalLB assigns an address.
	sw := switchClass(t, client, "classed", ptrTo(metallbClass), ips["classed"], "")
	if !mlbPool.Contains(netip.MustParseAddr(sw.newIP)) {
		t.Errorf("classed now at %s, outside MetalLB's pool", sw.newIP)
	}
	gone := waitVIPGone(t, ips["classed"], sw)
	checkOwner(t, client, "classed", "metallb", "")
	waitEvent(t, client, "classed", "TerraformDestroyed", "")
	t.Logf("tfccm.io/terraform -> MetalLB: MetalLB's address after %s, tfccm's VIP gone after %s", sw.assigned.Round(time.Millisecond), gone.Round(time.Millisecond))

	// MetalLB -> tfccm's class: the class loop applies a load balancer.
	sw = switchClass(t, client, "metallb", ptrTo(tfccmClass), "", "serve")
	if !tfccmPool.Contains(netip.MustParseAddr(sw.newIP)) {
		t.Errorf("metallb now at %s, outside tfccm's pool", sw.newIP)
	}
	checkOwner(t, client, "metallb", "tfccm", classFinalizer)
	t.Logf("MetalLB -> tfccm.io/terraform: VIP %s assigned after %s, answering after %s", sw.newIP, sw.assigned.Round(time.Millisecond), sw.served.Round(time.Millisecond))

	// Class-less (the service controller) -> tfccm's class: the same
	// workspace, handed from one owner to the other; the interruption is
	// measured from the host.
	sw = switchClass(t, client, "plain", ptrTo(tfccmClass), ips["plain"], "serve")
	checkOwner(t, client, "plain", "tfccm", classFinalizer)
	waitEvent(t, client, "plain", "TerraformDestroyed", "")
	t.Logf("class-less -> tfccm.io/terraform: VIP %s -> %s, new one assigned after %s, answering after %s; no answer from the host for %s",
		ips["plain"], sw.newIP, sw.assigned.Round(time.Millisecond), sw.served.Round(time.Millisecond), sw.outage.Round(time.Millisecond))

	// And back to class-less: the class loop releases it, the service
	// controller applies it again.
	sw = switchClass(t, client, "plain", nil, sw.newIP, "serve")
	checkOwner(t, client, "plain", "tfccm", serviceControllerFinalizer)
	t.Logf("tfccm.io/terraform -> class-less: answering after %s; no answer for %s", sw.served.Round(time.Millisecond), sw.outage.Round(time.Millisecond))

	// Deleting them: tfccm's go only after their load balancers.
	for name := range services {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range services {
		waitGone(t, client, name, ccmLog)
	}

	// The other way round: MetalLB without a class serves class-less
	// Services, tfccm with serve_classless = false only its class (the
	// service controller does not start).
	ccm.Stop()
	stopMetalLB()
	ccm = startTfccmWith(t, c, "serve_classless = false\n")
	mlbLog, _ = startMetalLB(t, c, "")
	for name, class := range map[string]*string{"plain2": nil, "classed2": ptrTo(tfccmClass)} {
		if _, err := client.CoreV1().Services("default").Create(ctx, classService(name, class), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, pool := range map[string]netip.Prefix{"plain2": mlbPool, "classed2": tfccmPool} {
		ip, err := harness.WaitForIngress(ctx, client, "default", name, 3*time.Minute)
		if err != nil {
			t.Fatalf("%v\ntfccm log:\n%s\nMetalLB log:\n%s", err, ccmLog(), mlbLog())
		}
		if !pool.Contains(netip.MustParseAddr(ip)) {
			t.Errorf("%s got %s, outside %s", name, ip, pool)
		}
		ips[name] = ip
	}
	waitGET(t, ips["classed2"], time.Minute)
	checkOwner(t, client, "plain2", "metallb", "")
	checkOwner(t, client, "classed2", "tfccm", classFinalizer)
	checkEventsOnlyFrom(t, client, "plain2", "metallb")
	checkEventsOnlyFrom(t, client, "classed2", "tfccm")
	if log := ccm.LogTail(2000); !strings.Contains(log, "the cloud provider does not support external load balancers") {
		t.Errorf("tfccm with serve_classless = false: no sign the service controller stayed off:\n%s", ccm.LogTail(40))
	}
	for _, name := range []string{"plain2", "classed2"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, client, name, ccmLog)
	}
}

func ptrTo(s string) *string { return &s }

func classService(name string, class *string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: class,
			Selector:          map[string]string{"app": "netexec"},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// startMetalLB installs MetalLB's CRDs and a pool and runs its controller
// (bin/metallb-controller, make tools-metallb) against the cluster for
// class ("": Services without a class); it returns the controller's log
// tail and a function stopping it.
func startMetalLB(t *testing.T, c *Cluster, class string) (log func() string, stop func()) {
	t.Helper()
	return startMetalLBAt(t, c.Kubeconfig(), class)
}

// startMetalLBAt is startMetalLB against the cluster of kubeconfig.
func startMetalLBAt(t *testing.T, kubeconfig, class string) (log func() string, stop func()) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "metallb-controller")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MetalLB's controller: %v (make tools-metallb)", err)
	}
	kubectl := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	kubectl("", "apply", "--server-side", "-f", filepath.Join(root, "bin", "metallb-crds"))
	kubectl("", "wait", "--for=condition=Established", "--timeout=60s", "crd/ipaddresspools.metallb.io")
	kubectl("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: metallb-system\n", "apply", "-f", "-")
	kubectl(fmt.Sprintf("apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: test\n  namespace: metallb-system\nspec:\n  addresses: [%q]\n", metallbPool), "apply", "-f", "-")
	logPath := filepath.Join(t.TempDir(), "metallb.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--namespace=metallb-system",
		"--webhook-mode=disabled", "--disable-cert-rotation", fmt.Sprintf("--port=%d", port)}
	if class != "" {
		args = append(args, "--lb-class="+class)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logFile.Close()
		})
	}
	t.Cleanup(stop)
	return func() string { return logTail(logPath, 30) }, stop
}

// switched is what switchClass measured, from the first of its updates.
type switched struct {
	newIP    string
	assigned time.Duration // status shows the new owner's address
	served   time.Duration // the new address answers (want "serve")
	gone     time.Duration // the old VIP stopped answering (0: not seen)
	outage   time.Duration // longest run without an answer from the old or new VIP
	start    time.Time
}

// switchClass moves a Service to class (nil: none) the one way the API
// allows: type NodePort, then type LoadBalancer with the class. With want
// "serve" it waits until the new address answers HTTP from the host;
// while it waits it polls oldIP and the new address every 100 ms.
func switchClass(t *testing.T, client kubernetes.Interface, name string, class *string, oldIP, want string) switched {
	t.Helper()
	ctx := context.Background()
	sw := switched{start: time.Now()}
	svc := getService(t, client, name)
	svc.Spec.Type = corev1.ServiceTypeNodePort
	svc.Spec.LoadBalancerClass = nil
	svc, err := client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("%s: type NodePort kept the status %v", name, svc.Status.LoadBalancer.Ingress)
	}
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	svc.Spec.LoadBalancerClass = class
	if _, err := client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	lastOK := sw.start
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		now := time.Now()
		if sw.newIP == "" {
			if s := getService(t, client, name); len(s.Status.LoadBalancer.Ingress) > 0 {
				sw.newIP, sw.assigned = s.Status.LoadBalancer.Ingress[0].IP, now.Sub(sw.start)
			}
		}
		ok := false
		if oldIP != "" && oldIP != sw.newIP && sw.gone == 0 {
			if answers(oldIP) {
				ok = true
			} else {
				sw.gone = time.Since(sw.start)
			}
		}
		if sw.newIP != "" && want == "serve" && answers(sw.newIP) {
			ok = true
			if sw.served == 0 {
				sw.served = time.Since(sw.start)
			}
		}
		if ok {
			sw.outage = max(sw.outage, now.Sub(lastOK))
			lastOK = now
		}
		if sw.newIP != "" && (want != "serve" || sw.served > 0) && (oldIP == "" || oldIP == sw.newIP || sw.gone > 0 || want != "serve") {
			return sw
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: no switch to class %v within 3 minutes: %+v", name, class, sw)
	return sw
}

// answers reports whether ip answers HTTP on port 80 within a second.
func answers(ip string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := httpGet(ctx, "http://"+ip+"/hostname")
	return err == nil
}

func waitGET(t *testing.T, ip string, timeout time.Duration) {
	t.Helper()
	err := harness.Eventually(context.Background(), timeout, "GET http://"+ip, func(ctx context.Context) error {
		_, err := httpGet(ctx, "http://"+ip+"/hostname")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitVIPGone waits until tfccm's old VIP no longer answers and returns
// when that was seen, from the switch's start.
func waitVIPGone(t *testing.T, ip string, sw switched) time.Duration {
	t.Helper()
	if sw.gone > 0 {
		return sw.gone
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !answers(ip) {
			return time.Since(sw.start)
		}
	}
	t.Errorf("%s still answers 2 minutes after the switch", ip)
	return 0
}

func getService(t *testing.T, client kubernetes.Interface, name string) *corev1.Service {
	t.Helper()
	svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// checkOwner waits until the Service carries exactly the finalizer of
// the path that serves it (none for MetalLB's or nobody's) and, served by
// tfccm, tfccm.io/Programmed=True for its current generation.
func checkOwner(t *testing.T, client kubernetes.Interface, name, owner, finalizer string) {
	t.Helper()
	err := harness.Eventually(context.Background(), time.Minute, name+" served by "+owner+" only", func(ctx context.Context) error {
		svc := getService(t, client, name)
		var want []string
		if finalizer != "" {
			want = []string{finalizer}
		}
		if !slices.Equal(svc.Finalizers, want) {
			return fmt.Errorf("finalizers %v, want %v", svc.Finalizers, want)
		}
		if owner != "tfccm" {
			return nil
		}
		for _, cond := range svc.Status.Conditions {
			if cond.Type == "tfccm.io/Programmed" && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == svc.Generation {
				return nil
			}
		}
		return fmt.Errorf("not tfccm.io/Programmed for generation %d: %+v", svc.Generation, svc.Status.Conditions)
	})
	if err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// checkEventsOnlyFrom checks that no controller but owner's recorded an
// Event on a Service never switched (tfccm's class annotation Warning
// aside, which is about any LoadBalancer Service).
func checkEventsOnlyFrom(t *testing.T, client kubernetes.Interface, name, owner string) {
	t.Helper()
	events, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		from := strings.ToLower(e.Source.Component + " " + e.ReportingController)
		by := ""
		switch {
		case strings.Contains(from, "metallb"):
			by = "metallb"
		case strings.Contains(from, "tfccm"), strings.Contains(from, "service-controller"):
			by = "tfccm"
		}
		if by != "" && by != owner && e.Reason != "TerraformClassAnnotationIgnored" {
			t.Errorf("%s (served by %q) has an Event from %s: %s %q", name, owner, from, e.Reason, e.Message)
		}
	}
}

func waitEvent(t *testing.T, client kubernetes.Interface, name, reason, contains string) {
	t.Helper()
	err := harness.Eventually(context.Background(), time.Minute, "Event "+reason+" on "+name, func(ctx context.Context) error {
		events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		var seen bytes.Buffer
		for _, e := range events.Items {
			if e.Reason == reason && strings.Contains(e.Message, contains) {
				return nil
			}
			fmt.Fprintf(&seen, "%s %s; ", e.Reason, e.Message)
		}
		return fmt.Errorf("seen: %s", seen.String())
	})
	if err != nil {
		t.Error(err)
	}
}

func waitGone(t *testing.T, client kubernetes.Interface, name string, ccmLog func() string) {
	t.Helper()
	err := harness.Eventually(context.Background(), 2*time.Minute, name+" deleted", func(ctx context.Context) error {
		svc, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("still there, finalizers %v", svc.Finalizers)
		}
		return nil
	})
	if err != nil {
		t.Errorf("%v\ntfccm log:\n%s", err, ccmLog())
	}
}
