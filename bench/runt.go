package bench

import (
	"fmt"
	"os"
	"runtime"
)

func numCPU() int { return runtime.NumCPU() }

// runT lets the process harness of testutil/node run outside `go test`.
type runT struct {
	dir      string
	cleanups []func()
}

func (r *runT) Helper()                           {}
func (r *runT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (r *runT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (r *runT) Cleanup(f func())                  { r.cleanups = append(r.cleanups, f) }
func (r *runT) TempDir() string {
	d, err := os.MkdirTemp(r.dir, "t")
	if err != nil {
		panic(err)
	}
	return d
}
func (r *runT) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	if os.Getenv("BFTLOG_BENCH_KEEP") != "" { // the nodes' homes and logs, to look into a run
		fmt.Fprintln(os.Stderr, "kept", r.dir)
		return
	}
	os.RemoveAll(r.dir)
}

// inTempDir runs f with a runT rooted in a new temporary directory: the process harness's
// failures (its Fatal panics) become errors, and every process it started is stopped.
func inTempDir(prefix string, f func(t *runT) error) (err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return err
	}
	t := &runT{dir: dir}
	defer t.close()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f(t)
}
