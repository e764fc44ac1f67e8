package testkit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBody bounds the body Get reads.
const maxBody = 1 << 20

// NewClient returns an HTTP client that opens a new connection for every
// request (so each one can reach another backend) and gives up after
// timeout.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

var defaultClient = NewClient(3 * time.Second)

// Get fetches url once with c (nil: NewClient(3s)) and returns the body of
// whatever answer came (a 503 from a load balancer without backends is an
// answer); the error says only that none came.
func Get(ctx context.Context, c *http.Client, url string) (string, error) {
	body, _, err := get(ctx, c, url)
	return body, err
}

// GetOK is Get that also wants 200 OK: another status is an error,
// returned with its body.
func GetOK(ctx context.Context, c *http.Client, url string) (string, error) {
	body, status, err := get(ctx, c, url)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("HTTP %d %s", status, http.StatusText(status))
	}
	return body, err
}

func get(ctx context.Context, c *http.Client, url string) (string, int, error) {
	if c == nil {
		c = defaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return string(b), resp.StatusCode, err
}

// GetEventually retries GetOK every Interval until url answers 200 OK or
// timeout passes (a load balancer's first health checks settling).
func GetEventually(ctx context.Context, c *http.Client, url string, timeout time.Duration) (string, error) {
	var body string
	err := Poll(ctx, Interval, timeout, "GET "+url, func(ctx context.Context) error {
		var err error
		body, err = GetOK(ctx, c, url)
		return err
	})
	return body, err
}
