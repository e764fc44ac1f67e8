// Measuring a VIP's availability while a failover happens.

package hosttest

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfccm/tfccm/test/localcloud"
)

// Failover is one measured VRRP failover.
type Failover struct {
	From, To string
	// Moved is the time from stopping the master until the other host
	// holds the VIP.
	Moved time.Duration
	// Requests were sent at 20 per second from this machine; Lost of them
	// failed.
	Requests, Lost int
}

func (f Failover) String() string {
	return fmt.Sprintf("%s -> %s: VIP moved after %s, %d of %d requests lost (20 req/s)",
		f.From, f.To, f.Moved.Round(time.Millisecond), f.Lost, f.Requests)
}

// Availability is what a client saw while something was done to a VIP.
type Availability struct {
	// Requests were sent at 20 per second from this machine; Lost of them
	// failed.
	Requests, Lost int
	// Failures are the first few failed requests: when each was sent
	// (from the start of the probe) and its error.
	Failures []string
}

func (a Availability) String() string {
	return fmt.Sprintf("%d of %d requests lost (20 req/s)", a.Lost, a.Requests)
}

// probe sends GET http://vip:port/ at 20 requests per second (a new
// connection each, 1 s timeout) until stopped, counting failures.
type probe struct {
	mu             sync.Mutex
	sent, lost     int
	failures       []string
	inflight       sync.WaitGroup
	done, loopDone chan struct{}
}

func (hs *Hosts) startProbe(vip string, port int) *probe {
	p := &probe{done: make(chan struct{}), loopDone: make(chan struct{})}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if strings.Contains(vip, ":") {
		// The host has no IPv6 route into the cloud: IPv6 VIPs are probed
		// from the cloud netns.
		client = localcloud.HTTPClient(hs.cloud.CloudNetns, time.Second)
	}
	url := "http://" + net.JoinHostPort(vip, strconv.Itoa(port)) + "/"
	start := time.Now()
	go func() {
		defer close(p.loopDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			p.inflight.Add(1)
			p.mu.Lock()
			p.sent++
			p.mu.Unlock()
			go func() {
				defer p.inflight.Done()
				sent := time.Since(start)
				resp, err := client.Get(url)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					p.mu.Lock()
					p.lost++
					if len(p.failures) < 5 {
						p.failures = append(p.failures, fmt.Sprintf("at %s: %v", sent.Round(time.Millisecond), err))
					}
					p.mu.Unlock()
				}
			}()
		}
	}()
	return p
}

// stop ends the probe once its requests in flight are answered or failed.
func (p *probe) stop() Availability {
	close(p.done)
	<-p.loopDone
	p.inflight.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return Availability{Requests: p.sent, Lost: p.lost, Failures: p.failures}
}

// MeasureDuring probes vip:port (20 requests per second, a new connection
// each) from one second before action until two seconds after it returned.
func (hs *Hosts) MeasureDuring(vip string, port int, action func()) Availability {
	p := hs.startProbe(vip, port)
	time.Sleep(time.Second)
	action()
	time.Sleep(2 * time.Second)
	return p.stop()
}

// MeasureFailover sends GET http://vip:port/ at 20 requests per second
// (a new connection each, 1 s timeout), stops vip's master with stop after
// one second, and keeps sending until the VIP has moved and 2 s more
// have passed.
func (hs *Hosts) MeasureFailover(vip string, port int, stop func(master *Host)) (Failover, error) {
	from := hs.Master(vip)
	if from == nil {
		return Failover{}, fmt.Errorf("no host holds %s", vip)
	}
	p := hs.startProbe(vip, port)
	time.Sleep(time.Second)
	start := time.Now()
	stop(from)
	var to *Host
	for to == nil || to == from {
		if time.Since(start) > 30*time.Second {
			p.stop()
			return Failover{}, fmt.Errorf("%s did not move from %s within 30 s", vip, from.Name)
		}
		time.Sleep(10 * time.Millisecond)
		to = hs.Master(vip)
	}
	moved := time.Since(start)
	time.Sleep(2 * time.Second)
	a := p.stop()
	return Failover{From: from.Name, To: to.Name, Moved: moved, Requests: a.Requests, Lost: a.Lost}, nil
}
