// Command lbhost-router is the routed-VIP service of an lbhost host (see
// lbhost/router): run it where the routes belong (the local cloud starts it
// in its router namespace) with the directory lbhost_routed_vip writes to.
//
//	lbhost-router -dir /run/tfccm/routed
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tfccm/tfccm/internal/version"
	"github.com/tfccm/tfccm/lbhost/router"
)

func main() {
	dir := flag.String("dir", "", "directory of the routed VIPs' config files (required)")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("lbhost-router"))
		return
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "lbhost-router: -dir is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := (&router.Service{Dir: *dir}).Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "lbhost-router:", err)
		os.Exit(1)
	}
}
