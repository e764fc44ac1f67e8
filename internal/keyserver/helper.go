package keyserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// The helper runs at package initialization, before the rest of the
// binary's packages are initialized where the import order allows, so a
// tofu key request costs a process start and one socket round trip.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Marker {
		os.Exit(helperMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// helperMain answers one request of OpenTofu's external key provider
// protocol: args are the server's socket and the key id. Errors go to
// stderr, which OpenTofu shows in its error; they never hold a key.
func helperMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tfccm encryption key: "+format+"\n", a...)
		return 1
	}
	if len(args) != 2 {
		return fail("usage: %s SOCKET KEY-ID (started by tofu, from the cloud config's key_provider \"tfccm_pbkdf2\")", Marker)
	}
	h, _ := json.Marshal(header{Magic: headerMagic, Version: headerVersion})
	if _, err := stdout.Write(append(h, '\n')); err != nil {
		return fail("%v", err)
	}
	in, err := io.ReadAll(stdin)
	if err != nil {
		return fail("reading tofu's metadata: %v", err)
	}
	in = trimOrNull(in)
	if !json.Valid(in) {
		return fail("invalid metadata from tofu (not JSON)")
	}
	out, err := ask(args[0], request{ID: args[1], Meta: json.RawMessage(in)})
	if err != nil {
		return fail("%v", err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fail("%v", err)
	}
	if _, err := stdout.Write(b); err != nil {
		return fail("%v", err)
	}
	return 0
}

func trimOrNull(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// ask sends req to the server on socket.
func ask(socket string, req request) (*output, error) {
	c, err := net.DialTimeout("unix", socket, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("the controller's key server: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("the controller's key server: %w", err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("the controller's key server: %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("the controller's key server: %w", err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("the controller's key server: %s", resp.Error)
	}
	if resp.Output == nil {
		return nil, fmt.Errorf("the controller's key server: empty answer")
	}
	return resp.Output, nil
}
