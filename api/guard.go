package api

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
)

// localHostNames are the names every server answers to: this machine's
// loopback names.
var localHostNames = []string{"localhost", "127.0.0.1", "::1"}

// DefaultAllowedHosts returns the Host names a server listening on addr
// answers to when --allowed-hosts is not given: the loopback names and
// the listen address's host; for an address of every interface (":8080",
// "0.0.0.0:8080") the machine's host name and interface addresses.
func DefaultAllowedHosts(addr string) []string {
	hosts := append([]string(nil), localHostNames...)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return append(hosts, host)
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		hosts = append(hosts, name)
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			hosts = append(hosts, n.IP.String())
		}
	}
	return hosts
}

// hostGuard answers the Host names a server serves (Config.AllowedHosts)
// and refuses cross-origin writes: the two checks that keep other web
// pages from using a server the browser can reach.
type hostGuard struct {
	// any is set by "*": every Host is served.
	any bool
	// names are exact host names; suffixes (".example.com") match any
	// name below them.
	names    map[string]bool
	suffixes []string
	cross    *http.CrossOriginProtection
}

// newHostGuard returns the guard of the allowed hosts (empty: the
// loopback names).
func newHostGuard(allowed []string) *hostGuard {
	if len(allowed) == 0 {
		allowed = localHostNames
	}
	g := &hostGuard{names: map[string]bool{}, cross: http.NewCrossOriginProtection()}
	for _, h := range allowed {
		h = strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]"))
		switch {
		case h == "*":
			g.any = true
		case strings.HasPrefix(h, "."):
			g.suffixes = append(g.suffixes, h)
		case h != "":
			g.names[h] = true
		}
	}
	return g
}

// allows reports whether a request's Host header (host or host:port)
// names this server.
func (g *hostGuard) allows(hostHeader string) bool {
	if g.any {
		return true
	}
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host = hostHeader
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if g.names[host] {
		return true
	}
	for _, s := range g.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// guardRequests refuses a request whose Host header names another server
// (DNS rebinding: a page of evil.example whose name now resolves to this
// machine) and a state-changing request sent by a page of another origin
// (Sec-Fetch-Site, else Origin against Host; a request with neither, from
// curl or the CLI, is not a browser's and passes). /healthz is answered
// whatever the Host: load balancers probe it by address.
func (s *Server) guardRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.URL.Path != "/healthz" && !s.guard.allows(req.Host) {
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf(
				"this server does not answer to the host name %q: reach it by a name it serves, or add the name to the server's --allowed-hosts", req.Host))
		}
		if err := s.guard.cross.Check(req); err != nil {
			return echo.NewHTTPError(http.StatusForbidden,
				"cross-origin request refused: a page of another site or port may not upload, delete or log in here")
		}
		return next(c)
	}
}
