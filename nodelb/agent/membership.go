// Gossip membership between the agents: who is alive, and whether each can serve.

package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"k8s.io/klog/v2"
)

// meta is what an agent gossips about itself (memberlist node metadata).
type meta struct {
	// Eligible: it can announce, its kubelet answers.
	Eligible bool `json:"e"`
	// Why it is not, for the NodeVIP status.
	Why string `json:"w,omitempty"`
}

// member is one live agent as the membership sees it.
type member struct {
	Name string
	meta
}

// membership is the agents' memberlist cluster.
type membership struct {
	list    *memberlist.Memberlist
	changed func()

	mu   sync.Mutex
	self meta
	// since: when this agent last became eligible. It counts itself a
	// candidate only selfSettle later, once the others heard it, so a
	// newcomer never answers while the holder it replaces still does.
	since time.Time
}

const selfSettle = time.Second

// membershipConfig is how an agent joins the gossip.
type membershipConfig struct {
	Name      string
	BindAddr  string
	Port      int
	SecretKey []byte
	// Fast: probe every 250 ms, a node is dead about a second after its
	// first missed probe.
	ProbeInterval time.Duration
}

func newMembership(cfg membershipConfig, self meta, changed func()) (*membership, error) {
	m := &membership{changed: changed, self: self}
	c := memberlist.DefaultLANConfig()
	c.Name = cfg.Name
	c.BindAddr = cfg.BindAddr
	c.BindPort = cfg.Port
	c.AdvertiseAddr = cfg.BindAddr
	c.AdvertisePort = cfg.Port
	c.SecretKey = cfg.SecretKey
	c.ProbeInterval = cfg.ProbeInterval
	c.ProbeTimeout = cfg.ProbeInterval * 4 / 5
	c.SuspicionMult = 2
	c.GossipInterval = 100 * time.Millisecond
	c.PushPullInterval = 10 * time.Second
	c.TCPTimeout = 2 * time.Second
	c.Delegate = m
	c.Events = m
	c.Logger = log.New(klogWriter{}, "memberlist: ", 0)
	list, err := memberlist.Create(c)
	if err != nil {
		return nil, fmt.Errorf("start gossip on %s:%d: %w", cfg.BindAddr, cfg.Port, err)
	}
	m.list = list
	return m, nil
}

// join contacts peers (addresses without the port); it returns how many
// answered.
func (m *membership) join(peers []string, port int) int {
	var addrs []string
	for _, p := range peers {
		addrs = append(addrs, net.JoinHostPort(p, strconv.Itoa(port)))
	}
	if len(addrs) == 0 {
		return 0
	}
	n, err := m.list.Join(addrs)
	if err != nil && n == 0 {
		klog.V(2).InfoS("gossip join", "peers", len(addrs), "err", err)
	}
	return n
}

// setSelf changes what this agent says about itself and gossips it.
func (m *membership) setSelf(s meta) {
	m.mu.Lock()
	same := m.self == s
	if s.Eligible && !m.self.Eligible {
		m.since = time.Now()
		time.AfterFunc(selfSettle, m.changed)
	}
	m.self = s
	m.mu.Unlock()
	if same {
		return
	}
	if err := m.list.UpdateNode(time.Second); err != nil {
		klog.ErrorS(err, "gossip my eligibility")
	}
	m.changed()
}

func (m *membership) selfMeta() meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.self
}

// members are the live agents by node name (suspect ones included: a
// node is gone when the gossip declares it dead).
func (m *membership) members() map[string]member {
	out := map[string]member{}
	for _, n := range m.list.Members() {
		var md meta
		if err := json.Unmarshal(n.Meta, &md); err != nil {
			md = meta{Why: "unreadable gossip metadata"}
		}
		out[n.Name] = member{Name: n.Name, meta: md}
	}
	m.mu.Lock()
	self := m.self
	self.Eligible = self.Eligible && time.Since(m.since) >= selfSettle
	m.mu.Unlock()
	out[m.list.LocalNode().Name] = member{Name: m.list.LocalNode().Name, meta: self}
	return out
}

// leave tells the others this agent goes (they take its VIPs over at
// once), then stops.
func (m *membership) leave() {
	if err := m.list.Leave(2 * time.Second); err != nil {
		klog.ErrorS(err, "leave gossip")
	}
	if err := m.list.Shutdown(); err != nil {
		klog.ErrorS(err, "stop gossip")
	}
}

// NodeMeta is memberlist's Delegate: this agent's metadata.
func (m *membership) NodeMeta(limit int) []byte {
	s := m.selfMeta()
	raw, _ := json.Marshal(s)
	for len(raw) > limit && s.Why != "" {
		s.Why = s.Why[:len(s.Why)/2]
		raw, _ = json.Marshal(s)
	}
	return raw
}

// The rest of memberlist's Delegate: no messages or state of our own.
func (m *membership) NotifyMsg([]byte)                           {}
func (m *membership) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (m *membership) LocalState(join bool) []byte                { return nil }
func (m *membership) MergeRemoteState(buf []byte, join bool)     {}

// memberlist's EventDelegate: every change reconciles.
func (m *membership) NotifyJoin(*memberlist.Node)   { m.changed() }
func (m *membership) NotifyLeave(*memberlist.Node)  { m.changed() }
func (m *membership) NotifyUpdate(*memberlist.Node) { m.changed() }

// klogWriter sends memberlist's log lines to klog at V(2) (warnings and
// errors at V(1): a dead node is news, not an error of this agent).
type klogWriter struct{}

func (klogWriter) Write(p []byte) (int, error) {
	klog.V(1).InfoS(string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && p[len(p)-1] == '\n' {
		p = p[:len(p)-1]
	}
	return p
}

// readKey reads the gossip key (16, 24 or 32 bytes) from path ("" none).
func readKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gossip key: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return nil, fmt.Errorf("gossip key: %w", err)
	}
	for len(raw) > 0 && (raw[len(raw)-1] == '\n' || raw[len(raw)-1] == '\r') {
		raw = raw[:len(raw)-1]
	}
	if n := len(raw); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("gossip key %s: %d bytes, want 16, 24 or 32", path, n)
	}
	return raw, nil
}
