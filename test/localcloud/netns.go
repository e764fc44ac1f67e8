package localcloud

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// InNetns runs fn on an OS thread switched into the named network
// namespace. Sockets fn creates stay in that namespace after it returns,
// so a listener made here can be served from any goroutine.
func InNetns(netns string, fn func() error) error {
	return InNetnsPath(filepath.Join("/run/netns", netns), fn)
}

// InNetnsPath is InNetns for a namespace file anywhere, e.g. a pod's
// /proc/PID/ns/net.
func InNetnsPath(path string, fn func() error) error {
	netns := path
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// If switching back fails the thread stays locked and dies with
		// this goroutine, so no other goroutine ever runs in the namespace.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", netns, err)
			return
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", netns, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", netns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("leave netns %s: %w", netns, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Listen opens a listener inside a namespace.
func Listen(netns, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := InNetns(netns, func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen %s %s in %s: %w", network, addr, netns, err)
	}
	return l, nil
}

// Dial connects from inside a namespace.
func Dial(ctx context.Context, netns, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := InNetns(netns, func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// HTTPClient returns a client whose connections start inside netns (no
// keep-alive, so every request is a new connection through the LB).
func HTTPClient(netns string, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return Dial(ctx, netns, network, addr)
			},
		},
	}
}

// Listen opens a listener inside a node's namespace, e.g.
// c.Listen("node-a", "tcp", ":30080").
func (c *Cloud) Listen(node, network, addr string) (net.Listener, error) {
	n := c.Node(node)
	if n.Netns == "" {
		return nil, fmt.Errorf("local cloud: no node %q", node)
	}
	return Listen(n.Netns, network, addr)
}

// ServeHTTP runs an HTTP server on every address of a node's netns at
// port that answers every request with body. stop closes it.
func (c *Cloud) ServeHTTP(node string, port int, body string) (stop func(), err error) {
	return c.serve(node, port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, body)
	}))
}

// ServeHealthz runs a kube-proxy-like health endpoint (GET /healthz → 200)
// in a node's netns; port 0 means kube-proxy's 10256.
func (c *Cloud) ServeHealthz(node string, port int) (stop func(), err error) {
	if port == 0 {
		port = 10256
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	return c.serve(node, port, mux)
}

func (c *Cloud) serve(node string, port int, h http.Handler) (func(), error) {
	l, err := c.Listen(node, "tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
