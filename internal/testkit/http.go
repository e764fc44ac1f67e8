package testkit

import (
	"context"
	"errors"
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

// Get fetches url once with c (nil: NewClient(3s)) and returns the body.
// An answer other than 200 OK is an error, returned with its body.
func Get(ctx context.Context, c *http.Client, url string) (string, error) {
	if c == nil {
		c = defaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return string(b), err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), errors.New(resp.Status)
	}
	return string(b), nil
}

// GetEventually retries Get every Interval until url answers 200 OK or
// timeout passes (a load balancer's first health checks settling).
func GetEventually(ctx context.Context, c *http.Client, url string, timeout time.Duration) (string, error) {
	var body string
	err := Poll(ctx, Interval, timeout, "GET "+url, func(ctx context.Context) error {
		var err error
		body, err = Get(ctx, c, url)
		return err
	})
	return body, err
}
