package node

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Hosts puts processes on hosts of their own: each host is a network namespace with an address
// of its own on a bridge (10.39.<k>.0/24), as machines on one LAN. The test process reaches
// every host through the bridge (10.39.<k>.254). It needs root and iproute2 (`ip netns`, veth);
// `tc netem` is not needed. Nothing a node decides may depend on an address; on one loopback
// address a test cannot show that, on distinct hosts it can.
type Hosts struct {
	t      T
	k      int
	bridge string
	mu     sync.Mutex
	n      int
}

// hostsSubnets hands each Hosts of this process a /24 of its own.
var hostsSubnets struct {
	sync.Mutex
	next int
}

// CanMakeHosts says why NewHosts cannot work here, or "" when it can: it tries once, making
// and removing a namespace and a bridge (root alone is not enough in every container).
func CanMakeHosts() string {
	canMakeHosts.Do(func() {
		if os.Geteuid() != 0 {
			canMakeHosts.why = "network namespaces need root"
			return
		}
		if _, err := exec.LookPath("ip"); err != nil {
			canMakeHosts.why = "no ip command (iproute2)"
			return
		}
		ns, br := fmt.Sprintf("bftlog-probe-%d", os.Getpid()), fmt.Sprintf("blprobe%d", os.Getpid()%100000)
		defer func() {
			_ = exec.Command("ip", "netns", "del", ns).Run()
			_ = exec.Command("ip", "link", "del", br).Run()
		}()
		for _, args := range [][]string{{"netns", "add", ns}, {"link", "add", br, "type", "bridge"}} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				canMakeHosts.why = fmt.Sprintf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
				return
			}
		}
	})
	return canMakeHosts.why
}

var canMakeHosts struct {
	sync.Once
	why string
}

// NewHosts makes the bridge; the hosts come with Add. Everything is removed when the test ends.
// Tests check CanMakeHosts first (and skip): here it is a failure.
func NewHosts(t T) *Hosts {
	t.Helper()
	if why := CanMakeHosts(); why != "" {
		t.Fatal(why)
	}
	// A subnet of its own: the first k from this process's start whose bridge this call creates
	// (another test process on the machine holds the others; none of theirs is touched).
	hostsSubnets.Lock()
	start := os.Getpid() + hostsSubnets.next
	hostsSubnets.next++
	hostsSubnets.Unlock()
	h := &Hosts{t: t}
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatal("no free subnet for hosts: 200 bridges blbr20..blbr219 exist")
		}
		h.k = 20 + (start+i)%200
		h.bridge = fmt.Sprintf("blbr%d", h.k)
		if exec.Command("ip", "link", "add", h.bridge, "type", "bridge").Run() == nil {
			break
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", h.bridge).Run() })
	// Bridged traffic skips iptables where br_netfilter is loaded (a Docker host's FORWARD
	// policy is DROP); an iproute2 that lacks the option leaves the default.
	_ = exec.Command("ip", "link", "set", h.bridge, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0", "nf_call_arptables", "0").Run()
	h.ip("addr", "add", h.Gateway()+"/24", "dev", h.bridge)
	h.ip("link", "set", h.bridge, "up")
	return h
}

// Gateway is the test process's own address on the hosts' network.
func (h *Hosts) Gateway() string { return fmt.Sprintf("10.39.%d.254", h.k) }

// Host is one host: its namespace and address.
type Host struct {
	Netns string
	Addr  string
}

// Add makes the next host.
func (h *Hosts) Add() Host {
	h.t.Helper()
	h.mu.Lock()
	i := h.n
	h.n++
	h.mu.Unlock()
	ns := fmt.Sprintf("bftlog-%d-%d", h.k, i)
	veth := fmt.Sprintf("blv%d-%d", h.k, i)
	_ = exec.Command("ip", "netns", "del", ns).Run() // left by a killed run of this subnet: its bridge is ours now
	h.ip("netns", "add", ns)
	h.t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	h.ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
	h.ip("link", "set", veth, "master", h.bridge, "up")
	addr := fmt.Sprintf("10.39.%d.%d", h.k, i+1)
	h.ip("-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	h.ip("-n", ns, "link", "set", "eth0", "up")
	h.ip("-n", ns, "link", "set", "lo", "up")
	return Host{Netns: ns, Addr: addr}
}

func (h *Hosts) ip(args ...string) {
	h.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Command runs name on host (in its namespace; `ip netns exec` execs it, so the process is
// name's own: signals reach it).
func (host Host) Command(name string, args ...string) *exec.Cmd {
	if host.Netns == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", host.Netns, name}, args...)...)
}
