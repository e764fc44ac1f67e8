// The agent: its configuration, watches, gossip and the loop that runs them.

package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/nodelb/announce"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// Config is how one agent runs.
type Config struct {
	// NodeName is this agent's node (the DaemonSet's spec.nodeName).
	NodeName string
	// Namespace holds the NodeVIP objects (tfccm's).
	Namespace string
	// GossipAddress and GossipPort: where the agents reach each other
	// (default the node's InternalIP, port 7946).
	GossipAddress string
	GossipPort    int
	// GossipKeyFile holds the key that encrypts and authenticates the
	// gossip (16, 24 or 32 bytes); "" gossips in clear.
	GossipKeyFile string
	// ProbeInterval is the gossip's probe period (default 250 ms).
	ProbeInterval time.Duration
	// KubeletHealthz is the kubelet's health URL ("" does not check).
	KubeletHealthz string
	// Resync reconciles everything at least this often (default 2 s).
	Resync time.Duration
	// MetricsAddress serves /metrics (tfccm_node_vip_held); "" serves none.
	MetricsAddress string
	// FRRDir is where the node's FRR has its vty sockets (the chart's
	// hostPath /var/run/frr): BGP mode (NodeVIPs with announce bgp,
	// configured by the NodeBGP object). "": BGP mode is off and such
	// NodeVIPs are reported as not announced.
	FRRDir string
}

// Agent is one running node agent.
type Agent struct {
	cfg     Config
	kube    kubernetes.Interface
	dyn     dynamic.ResourceInterface
	members *membership
	speaker *announce.Speaker
	events  eventSink
	trigger chan struct{}

	nodes  func() []*corev1.Node
	vips   func() []*vipapi.NodeVIP
	slices func(namespace, name string) []*discoveryv1.EndpointSlice

	// held are the VIPs this node answers for, by address.
	held map[string]heldVIP
	// cut: this node is cut off (see isolation.go); it holds nothing.
	cut isolation
	// overwrote: when this agent last wrote itself as holder over a
	// status naming another holder, by address (see mayOverwrite).
	overwrote map[string]time.Time
	// handover: since when this agent waits for the old holder to release
	// an address it was chosen for, by address (see waitHandover).
	handover map[string]time.Time
	// contention: other nodes answering for addresses this node holds
	// (see contention.go).
	contention contention
	// bgp is BGP mode's state (bgp.go).
	bgp bgpState
}

// Run runs the agent until ctx ends; then it leaves the gossip (the other
// agents take its VIPs over) and stops answering for its VIPs.
func Run(ctx context.Context, cfg Config, kube kubernetes.Interface, dyn dynamic.Interface) error {
	if cfg.GossipPort == 0 {
		cfg.GossipPort = 7946
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = 250 * time.Millisecond
	}
	if cfg.Resync == 0 {
		cfg.Resync = 2 * time.Second
	}
	if cfg.NodeName == "" || cfg.Namespace == "" {
		return errors.New("node-agent needs its node name and the NodeVIPs' namespace")
	}
	a := &Agent{
		cfg:     cfg,
		kube:    kube,
		dyn:     dyn.Resource(vipapi.GVR).Namespace(cfg.Namespace),
		speaker: announce.NewSpeaker(),
		trigger: make(chan struct{}, 1),
		held:    map[string]heldVIP{},

		overwrote: map[string]time.Time{},
		handover:  map[string]time.Time{},

		contention: newContention(),
		bgp:        bgpState{dir: cfg.FRRDir, spec: func() *vipapi.NodeBGP { return nil }, announced: map[string]bool{}},
	}
	a.bgp.dyn = dyn.Resource(vipapi.BGPGVR).Namespace(cfg.Namespace)
	a.bgp.secrets = func(ctx context.Context, name string) (*corev1.Secret, error) {
		return kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if err := a.watch(ctx, dyn); err != nil {
		return err
	}
	self, err := kube.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node-agent: my Node %s: %w", cfg.NodeName, err)
	}
	if cfg.GossipAddress == "" {
		cfg.GossipAddress = internalIP(self)
		a.cfg.GossipAddress = cfg.GossipAddress
	}
	key, err := readKey(cfg.GossipKeyFile)
	if err != nil {
		return err
	}
	caps := capabilityProblem()
	if caps != "" {
		klog.ErrorS(nil, "this node cannot hold VIPs", "reason", caps)
	}
	a.members, err = newMembership(membershipConfig{
		Name: cfg.NodeName, BindAddr: cfg.GossipAddress, Port: cfg.GossipPort,
		SecretKey: key, ProbeInterval: cfg.ProbeInterval,
	}, meta{Why: "starting"}, a.kick)
	if err != nil {
		return err
	}
	a.events = newEventSink(kube, cfg.Namespace, cfg.NodeName)
	defer a.events.stop()
	// Learn the membership before taking anything: alone, every VIP would
	// look like this node's.
	n := a.members.join(a.peers(), cfg.GossipPort)
	klog.InfoS("node agent joined the gossip", "node", cfg.NodeName, "address", cfg.GossipAddress, "peersAnswering", n)
	check := &selfCheck{kubeletURL: cfg.KubeletHealthz, interval: 500 * time.Millisecond, failures: 2, client: &http.Client{}}
	go check.run(ctx, a.members, caps)
	go a.rejoin(ctx)
	go a.cut.watch(ctx, a.kube, cfg.NodeName, a.members, a.kick)
	go serveMetrics(ctx, cfg.MetricsAddress)

	tick := time.NewTicker(cfg.Resync)
	defer tick.Stop()
	for {
		a.reconcile(ctx)
		select {
		case <-ctx.Done():
			a.stop()
			return nil
		case <-a.trigger:
		case <-tick.C:
		}
	}
}

// kick asks for a reconcile soon (coalesced).
func (a *Agent) kick() {
	select {
	case a.trigger <- struct{}{}:
	default:
	}
}

// watch starts the informers of Nodes, EndpointSlices and NodeVIPs and
// waits for their first lists.
func (a *Agent) watch(ctx context.Context, dyn dynamic.Interface) error {
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.kick() },
		UpdateFunc: func(any, any) { a.kick() },
		DeleteFunc: func(any) { a.kick() },
	}
	f := informers.NewSharedInformerFactory(a.kube, 0)
	nodes := f.Core().V1().Nodes()
	eps := f.Discovery().V1().EndpointSlices()
	for _, inf := range []cache.SharedIndexInformer{nodes.Informer(), eps.Informer()} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return err
		}
	}
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, a.cfg.Namespace, nil)
	vips := df.ForResource(vipapi.GVR)
	if _, err := vips.Informer().AddEventHandler(kick); err != nil {
		return err
	}
	if a.cfg.FRRDir != "" {
		// BGP mode: the NodeBGP object too (its CRD comes with the chart).
		bgps := df.ForResource(vipapi.BGPGVR)
		if _, err := bgps.Informer().AddEventHandler(kick); err != nil {
			return err
		}
		a.bgp.spec = func() *vipapi.NodeBGP {
			o, err := bgps.Lister().ByNamespace(a.cfg.Namespace).Get(vipapi.BGPName)
			if err != nil {
				return nil
			}
			u, ok := o.(interface{ UnstructuredContent() map[string]any })
			if !ok {
				return nil
			}
			var b vipapi.NodeBGP
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &b); err != nil {
				klog.ErrorS(err, "unreadable NodeBGP")
				return nil
			}
			return &b
		}
	}
	f.Start(ctx.Done())
	df.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("node-agent: watch %v did not sync", typ)
		}
	}
	for gvr, ok := range df.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("node-agent: watch %v did not sync (are the NodeVIP and, with BGP mode, NodeBGP CRDs installed?)", gvr)
		}
	}
	a.nodes = func() []*corev1.Node {
		list, _ := nodes.Lister().List(labels.Everything())
		return list
	}
	a.slices = func(namespace, name string) []*discoveryv1.EndpointSlice {
		sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
		list, _ := eps.Lister().EndpointSlices(namespace).List(sel)
		return list
	}
	a.vips = func() []*vipapi.NodeVIP {
		objs, _ := vips.Lister().List(labels.Everything())
		var out []*vipapi.NodeVIP
		for _, o := range objs {
			u, ok := o.(interface{ UnstructuredContent() map[string]any })
			if !ok {
				continue
			}
			v, err := vipFromMap(u.UnstructuredContent())
			if err != nil {
				klog.ErrorS(err, "unreadable NodeVIP")
				continue
			}
			out = append(out, v)
		}
		return out
	}
	return nil
}

// peers are the InternalIPs of the nodes whose agents are not members
// (this node excluded): every Node, since any may run an agent (a node
// without one refuses the connection at once).
func (a *Agent) peers() []string {
	var members map[string]member
	if a.members != nil {
		members = a.members.members()
	}
	var out []string
	for _, n := range a.nodes() {
		if n.Name == a.cfg.NodeName {
			continue
		}
		if _, ok := members[n.Name]; ok {
			continue
		}
		if ip := internalIP(n); ip != "" {
			out = append(out, ip)
		}
	}
	return out
}

// rejoin contacts, every second, the nodes whose agents are not members:
// a partition healed (memberlist never probes a node it declared dead),
// an agent restarted.
func (a *Agent) rejoin(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, p := range a.peers() {
				go a.members.join([]string{p}, a.cfg.GossipPort)
			}
		}
	}
}

// stop withdraws its BGP announcements, leaves the gossip, then stops
// answering for every VIP.
func (a *Agent) stop() {
	if a.bgp.dir != "" {
		var self *corev1.Node
		for _, n := range a.nodes() {
			if n.Name == a.cfg.NodeName {
				self = n
			}
		}
		a.withdrawBGP(self)
	}
	a.members.leave()
	for addr, h := range a.held {
		a.release(addr, h)
	}
	a.speaker.Close()
	klog.InfoS("node agent stopped; its VIPs are released", "node", a.cfg.NodeName)
}
