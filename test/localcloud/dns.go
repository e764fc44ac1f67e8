package localcloud

import (
	"fmt"
	"net"
	"time"

	"github.com/miekg/dns"
)

// ServeDNS runs a DNS server (miekg/dns, the library CoreDNS is built on)
// in a node's netns on port, over UDP and TCP: every question is answered
// with one TXT record "<node> saw <client address> over <udp|tcp>". stop
// shuts both down.
func (c *Cloud) ServeDNS(node string, port int) (stop func(), err error) {
	n := c.Node(node)
	if n.Netns == "" {
		return nil, fmt.Errorf("local cloud: no node %q", node)
	}
	handler := func(network string) dns.HandlerFunc {
		return func(w dns.ResponseWriter, q *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(q)
			client, _, _ := net.SplitHostPort(w.RemoteAddr().String())
			for _, question := range q.Question {
				m.Answer = append(m.Answer, &dns.TXT{
					Hdr: dns.RR_Header{Name: question.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET},
					Txt: []string{fmt.Sprintf("%s saw %s over %s", node, client, network)},
				})
			}
			_ = w.WriteMsg(m)
		}
	}
	var pc net.PacketConn
	if err := InNetns(n.Netns, func() (err error) {
		pc, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		return nil, fmt.Errorf("listen udp :%d in %s: %w", port, n.Netns, err)
	}
	l, err := Listen(n.Netns, "tcp4", fmt.Sprintf(":%d", port))
	if err != nil {
		pc.Close()
		return nil, err
	}
	udp := &dns.Server{PacketConn: pc, Handler: handler("udp")}
	tcp := &dns.Server{Listener: l, Handler: handler("tcp")}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	return func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
	}, nil
}

// AskDNS sends one TXT question to addr over network ("udp" or "tcp")
// from this machine and returns the answer's text.
func AskDNS(network, addr string) (string, error) {
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("who.tfccm.test.", dns.TypeTXT)
	r, _, err := c.Exchange(q, addr)
	if err != nil {
		return "", err
	}
	if len(r.Answer) != 1 {
		return "", fmt.Errorf("answer %v", r.Answer)
	}
	txt, ok := r.Answer[0].(*dns.TXT)
	if !ok || len(txt.Txt) != 1 {
		return "", fmt.Errorf("answer %v", r.Answer)
	}
	return txt.Txt[0], nil
}
