package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/bftlog/bftlog/testutil/node"
)

// profile starts a CPU profile of every validator serving pprof, for cfg.ProfileSeconds from
// now, and returns a function that waits for them and then takes a heap profile of each. Files
// go to cfg.ProfileDir as <label>-N<validators>-node<i>.{cpu,heap}.pprof. It does nothing
// without a ProfileDir; a failed profile is logged, never fatal to the measurement.
func (c *chain) profile(cfg Config, label string) (heap func()) {
	if cfg.ProfileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		cfg.Log("  profiles: %v", err)
		return func() {}
	}
	name := func(i int, kind string) string {
		return filepath.Join(cfg.ProfileDir, fmt.Sprintf("%s-N%d-node%d.%s.pprof", label, len(c.net.Nodes), i, kind))
	}
	done := make(chan struct{}, len(c.net.Nodes))
	started := 0
	for i, n := range c.net.Nodes {
		if n.Pprof == "" {
			continue
		}
		started++
		go func() {
			defer func() { done <- struct{}{} }()
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", n.Pprof, max(1, cfg.ProfileSeconds))
			if err := download(url, name(i, "cpu"), time.Duration(cfg.ProfileSeconds+30)*time.Second); err != nil {
				cfg.Log("  cpu profile of node %d: %v", i, err)
			}
		}()
	}
	if started == 0 {
		cfg.Log("  profiles: no validator serves pprof (set BFTLOG_PPROF_LADDR=auto)")
	}
	return func() {
		for range started {
			<-done
		}
		for i, n := range c.net.Nodes {
			if n.Pprof == "" {
				continue
			}
			if err := download("http://"+n.Pprof+"/debug/pprof/heap", name(i, "heap"), 30*time.Second); err != nil {
				cfg.Log("  heap profile of node %d: %v", i, err)
			}
		}
		if started > 0 {
			cfg.Log("  profiles of %d validator(s) in %s", started, cfg.ProfileDir)
		}
	}
}

func download(url, path string, timeout time.Duration) error {
	cl := &http.Client{Timeout: timeout}
	resp, err := cl.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileKafka profiles the Kafka-client run when cfg.ProfileDir is set: this process (the
// gateway and the franz-go client run in it) until the returned function is called, and the
// validator for cfg.ProfileSeconds if it serves pprof. The function may be called again.
func profileKafka(cfg Config, n0 *node.Node) func() {
	if cfg.ProfileDir == "" || os.MkdirAll(cfg.ProfileDir, 0o755) != nil {
		return func() {}
	}
	f, err := os.Create(filepath.Join(cfg.ProfileDir, "kafka-harness.cpu.pprof"))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if n0.Pprof != "" {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", n0.Pprof, max(1, cfg.ProfileSeconds))
			if err := download(url, filepath.Join(cfg.ProfileDir, "kafka-N1-node0.cpu.pprof"), time.Duration(cfg.ProfileSeconds+30)*time.Second); err != nil {
				cfg.Log("  cpu profile of the validator: %v", err)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
			<-done
			cfg.Log("  profiles of the gateway run in %s", cfg.ProfileDir)
		})
	}
}
