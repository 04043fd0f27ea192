package live

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sampleOS reads what Linux tells of the CPU this process got: its own CPU
// time (getrusage, the figure /proc/self/stat has in clock ticks), the
// machine's steal time (/proc/stat: CPU a hypervisor gave to another
// guest) and the cgroup's throttling (cpu.stat's nr_throttled and
// throttled_usec, or throttled_time in cgroup v1). A figure the system
// does not give stays zero and its ok flag false.
func sampleOS() osSample {
	var s osSample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		if len(f) > 8 && f[0] == "cpu" {
			for i, v := range f[1:] {
				n, _ := strconv.ParseUint(v, 10, 64)
				if i < 8 { // guest time is counted in user time already
					s.jiffies += n
				}
				if i == 7 {
					s.steal = n
				}
			}
			s.stealOK = true
		}
	}
	s.throttled, s.throttledTime, s.throttleOK = cgroupThrottling()
	return s
}

// cgroupThrottling reads the CPU throttling of this process's cgroup.
func cgroupThrottling() (n uint64, t time.Duration, ok bool) {
	for _, p := range cpuStatPaths() {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), " ")
			x, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "nr_throttled":
				n, ok = x, true
			case "throttled_usec": // cgroup v2
				t = time.Duration(x) * time.Microsecond
			case "throttled_time": // cgroup v1, nanoseconds
				t = time.Duration(x)
			}
		}
		f.Close()
		if ok {
			return n, t, true
		}
	}
	return 0, 0, false
}

// cpuStatPaths returns where this process's cgroup keeps cpu.stat: the
// unified (v2) hierarchy's path, then the v1 cpu controller's.
func cpuStatPaths() []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var v2, v1 []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = append(v2, filepath.Join("/sys/fs/cgroup", parts[2], "cpu.stat"))
		case strings.Contains(","+parts[1]+",", ",cpu,"):
			v1 = append(v1, filepath.Join("/sys/fs/cgroup/cpu", parts[2], "cpu.stat"), filepath.Join("/sys/fs/cgroup/cpu,cpuacct", parts[2], "cpu.stat"))
		}
	}
	return append(v2, v1...)
}
