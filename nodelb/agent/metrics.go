// The agent's metrics: which VIPs this node holds.

package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// Metrics names what the agents serve on /metrics (not the CCM): the
// chart's alerts may use them too.
var Metrics = []string{heldMetric, sessionUpMetric}

const heldMetric = "tfccm_node_vip_held"

// heldGauge is 1 for each VIP this node answers for: summed over the
// nodes, a VIP at 0 has no holder and at 2 two (alert on both).
var heldGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: heldMetric,
	Help: "1 for each node-mode VIP (address) this node answers for; summed over the nodes it is the number of holders, which must be 1.",
}, []string{"address", "node"})

func init() { prometheus.MustRegister(heldGauge) }

// serveMetrics serves /metrics on addr until ctx ends ("" serves nothing).
func serveMetrics(ctx context.Context, addr string) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		klog.ErrorS(err, "metrics", "address", addr)
		return
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.ErrorS(err, "metrics", "address", addr)
	}
}
