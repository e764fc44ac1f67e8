// Command lbhost-router is the service side of an lbhost host: the
// routed-VIP service (lbhost/router) for the directory lbhost_routed_vip
// writes to, and the layer-4 load balancer (lbhost/l4) for the directory
// lbhost_l4_frontend writes to, and the BGP announcer (lbhost/announce)
// for the directory lbhost_bgp_announcement writes to. Run it where the routes and nftables rules
// belong (the local cloud starts it in its router namespace; a bare-metal
// LB host runs it as a systemd service).
//
//	lbhost-router -dir /run/tfccm/routed -l4 /etc/tfccm/lbhost/l4 -announce /etc/tfccm/lbhost/bgp
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/tfccm/tfccm/internal/version"
	"github.com/tfccm/tfccm/lbhost/announce"
	"github.com/tfccm/tfccm/lbhost/l4"
	"github.com/tfccm/tfccm/lbhost/router"
)

func main() {
	dir := flag.String("dir", "", "directory of the routed VIPs' config files")
	l4Dir := flag.String("l4", "", "directory of the layer-4 load balancers' config files (<config_dir>/l4 of the lbhost provider)")
	announceDir := flag.String("announce", "", "directory of the BGP-announced addresses' config files (<config_dir>/bgp of the lbhost provider)")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("lbhost-router"))
		return
	}
	if *dir == "" && *l4Dir == "" && *announceDir == "" {
		fmt.Fprintln(os.Stderr, "lbhost-router: -dir, -l4, -announce or several are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	if *dir != "" {
		g.Go(func() error { return (&router.Service{Dir: *dir}).Serve(ctx) })
	}
	if *l4Dir != "" {
		g.Go(func() error { return (&l4.Service{Dir: *l4Dir}).Serve(ctx) })
	}
	if *announceDir != "" {
		g.Go(func() error { return (&announce.Service{Dir: *announceDir}).Serve(ctx) })
	}
	if err := g.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "lbhost-router:", err)
		os.Exit(1)
	}
}
