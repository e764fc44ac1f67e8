// This agent's own eligibility: can it announce, does its kubelet answer.

package agent

import (
	"context"
	"net/http"
	"time"

	"github.com/tfccm/tfccm/nodelb/announce"
)

// selfCheck watches what makes this agent unable to serve and gossips it:
// missing capabilities (once: they do not change) and the kubelet's
// health endpoint (failures in a row, so one slow answer moves nothing).
type selfCheck struct {
	kubeletURL string
	interval   time.Duration
	failures   int
	client     *http.Client
}

// capabilityProblem is why the agent can never announce ("" when it can).
func capabilityProblem() string {
	if err := announce.CheckCapabilities(); err != nil {
		return err.Error()
	}
	return ""
}

// run updates m with this node's eligibility until ctx ends.
func (s *selfCheck) run(ctx context.Context, m *membership, caps string) {
	if caps != "" {
		m.setSelf(meta{Why: caps})
		return
	}
	if s.kubeletURL == "" {
		m.setSelf(meta{Eligible: true})
		return
	}
	bad := 0
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		if s.kubeletHealthy(ctx) {
			bad = 0
			m.setSelf(meta{Eligible: true})
		} else if bad++; bad >= s.failures {
			m.setSelf(meta{Why: "its kubelet does not answer " + s.kubeletURL})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *selfCheck) kubeletHealthy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.kubeletURL, nil)
	if err != nil {
		return false
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
