package lbhosts

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
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

// MeasureFailover sends GET http://vip:port/ at 20 requests per second
// (a new connection each, 1 s timeout), stops vip's master with stop after
// one second, and keeps sending until the VIP has moved and 2 s more
// have passed.
func (hs *Hosts) MeasureFailover(vip string, port int, stop func(master *Host)) (Failover, error) {
	from := hs.Master(vip)
	if from == nil {
		return Failover{}, fmt.Errorf("no host holds %s", vip)
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + net.JoinHostPort(vip, strconv.Itoa(port)) + "/"
	var (
		mu       sync.Mutex
		sent     int
		lost     int
		inflight sync.WaitGroup
	)
	done := make(chan struct{})
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			inflight.Add(1)
			mu.Lock()
			sent++
			mu.Unlock()
			go func() {
				defer inflight.Done()
				resp, err := client.Get(url)
				if err == nil {
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					mu.Lock()
					lost++
					mu.Unlock()
				}
			}()
		}
	}()
	finish := func() {
		close(done)
		<-loop
		inflight.Wait()
	}
	time.Sleep(time.Second)
	start := time.Now()
	stop(from)
	var to *Host
	for to == nil || to == from {
		if time.Since(start) > 30*time.Second {
			finish()
			return Failover{}, fmt.Errorf("%s did not move from %s within 30 s", vip, from.Name)
		}
		time.Sleep(10 * time.Millisecond)
		to = hs.Master(vip)
	}
	moved := time.Since(start)
	time.Sleep(2 * time.Second)
	finish()
	return Failover{From: from.Name, To: to.Name, Moved: moved, Requests: sent, Lost: lost}, nil
}
