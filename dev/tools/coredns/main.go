// Command coredns is CoreDNS (github.com/coredns/coredns/coremain) built with
// only the plugins the real node's Corefile uses (dev/real-node/addons.sh,
// coredns_up): bind, ready, health, errors, cache, kubernetes, forward.
// CoreDNS's own main package imports every plugin (core/plugin/zplugin.go),
// among them the route53, azure and clouddns plugins with their cloud SDKs;
// this is CoreDNS's documented custom build instead: import coremain and the
// wanted plugins, and set the directive list before coremain.Run.
//
// A Corefile naming a plugin not listed here fails at start-up with Caddy's
// "unknown directive" error: add the plugin's import and its name below, at
// its place in CoreDNS's core/dnsserver/zdirectives.go, to use it.
package main

import (
	"fmt"
	"os"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the imported plugins in CoreDNS's execution order, the
// order of core/dnsserver/zdirectives.go at the pinned version (plugin.cfg),
// whatever their order in the Corefile.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"cache",
	"kubernetes",
	"forward",
}

func init() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		fmt.Fprintf(os.Stderr, "coredns: directive list: %v\n", err)
		os.Exit(1)
	}
}

func main() {
	coremain.Run()
}
