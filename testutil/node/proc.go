package node

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Process figures from Linux's /proc, for the harnesses that measure nodes (the soak, the
// benchmark) and for Node.PeakRSS. Each is 0 where /proc cannot tell.

// ProcStatus reads a /proc/<pid>/status field given in kB (VmRSS, VmHWM) as bytes.
func ProcStatus(pid int, field string) uint64 {
	bz, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(bz), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// ProcCPU is a process's user and system CPU time so far (/proc/<pid>/stat, in clock ticks of
// 10 ms).
func ProcCPU(pid int) time.Duration {
	bz, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) end with ')'.
	s := string(bz)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// ResetPeakRSS starts a new peak-RSS (VmHWM) window for the processes (writing 5 to
// /proc/<pid>/clear_refs).
func ResetPeakRSS(pids ...int) {
	for _, pid := range pids {
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
}
