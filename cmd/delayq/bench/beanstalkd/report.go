package main

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- bench-beanstalkd:begin -->"
	endMarker   = "<!-- bench-beanstalkd:end -->"
)

type report struct {
	opts              options
	started, finished time.Time
	contestants       []*contestant
	results           []result
}

// stat is the median, minimum and maximum of some runs.
type stat struct{ med, min, max float64 }

func stats(xs []float64) stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med, s[0], s[len(s)-1]}
}

// runs returns f of every run of one contestant in one scenario.
func (r *report) runs(name string, conns int, f func(result) float64) []float64 {
	var xs []float64
	for _, res := range r.results {
		if res.contestant == name && res.conns == conns {
			xs = append(xs, f(res))
		}
	}
	return xs
}

var phases = []struct {
	name string
	of   func(result) phase
}{
	{"put", func(r result) phase { return r.put }},
	{"reserve+delete", func(r result) phase { return r.take }},
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o := r.opts
	names := make([]string, len(r.contestants))
	for i, c := range r.contestants {
		names[i] = c.name
	}
	w("## beanstalkd protocol: delayq against beanstalkd\n\n")
	w("`delayq server --beanstalkd-listen` and the real beanstalkd, side by side in one run, through the same client ([go-beanstalk](https://github.com/beanstalkd/go-beanstalk) %s): each scenario puts %s jobs of %d bytes (priority 1024, no delay, TTR 60 s) with C connections, then reserves and deletes them all with C connections; each connection is a goroutine with a go-beanstalk `Conn` of its own and sends one command at a time. Each figure is the **median (min–max) of %d runs**; the order of the servers rotates from run to run. delayq / beanstalkd divides the medians: 100 %% means as fast.\n\n",
		moduleVersion("github.com/beanstalkd/go-beanstalk"), num(float64(o.jobs)), bodySize, o.runs)
	w("```sh\nmake bench-beanstalkd\n```\n\n")
	w("runs `go run ./cmd/delayq/bench/beanstalkd -n %d -runs %d -write BENCHMARKS.md`, which builds `./cmd/delayq`, starts every server itself on free loopback ports with fresh directories (each server warms up on 2,000 jobs with 50 connections first), prints this section and rewrites it here.\n\n", o.jobs, o.runs)
	w("- Machine: %s, linux/%s, Linux %s; the client runs on the same machine as the servers, so all three share its cores\n", machine(), runtime.GOARCH, readTrim("/proc/sys/kernel/osrelease"))
	w("- Versions: delayq %s, %s, %s, %s\n", delayqVersion(), firstLine("redis-server", "--version"), firstLine("beanstalkd", "-v"), runtime.Version())
	w("- **delayq**: `delayq server --beanstalkd-listen …` with its embedded redis-server: AOF on, `appendfsync everysec` (the default; a machine crash may lose the last second)\n")
	w("- **beanstalkd -b**: binlog on (`-b DIR`) at beanstalkd's default fsync setting, at most every 50 ms (`beanstalkd -h`: \"-f MS fsync at most once every MS milliseconds (default is 50ms)\"): stricter than everysec\n")
	w("- **beanstalkd -b -f 1000**: binlog on, fsync at most once a second: the closest to everysec\n")
	w("- Ran from %s to %s UTC (%s)\n\n", r.started.UTC().Format("2006-01-02 15:04"), r.finished.UTC().Format("15:04"), r.finished.Sub(r.started).Round(time.Second))

	w("| scenario | connections |")
	for _, n := range names {
		w(" %s jobs/s |", n)
	}
	for _, n := range names[1:] {
		w(" delayq / %s |", n)
	}
	w("\n|---|---:|%s%s\n", strings.Repeat("---:|", len(names)), strings.Repeat("---:|", len(names)-1))
	for _, ph := range phases {
		for _, conns := range o.conns {
			w("| %s | %d |", ph.name, conns)
			meds := map[string]float64{}
			for _, n := range names {
				s := stats(r.runs(n, conns, func(res result) float64 { return ph.of(res).rate }))
				meds[n] = s.med
				w(" %s (%s–%s) |", num(s.med), num(s.min), num(s.max))
			}
			for _, n := range names[1:] {
				w(" %.0f %% |", 100*meds[names[0]]/meds[n])
			}
			w("\n")
		}
	}

	w("\n### What bounds it\n\n")
	w("CPU time each process spent per job (user and system, from `/proc/PID/stat` before and after each phase), the cores they kept busy together (their CPU time over the wall time) and the cores the whole machine kept busy (from `/proc/stat`: other programs on the machine count there too); medians of the runs:\n\n")
	w("| server | scenario | connections | wall µs per job | CPU µs per job: server | redis-server | client | cores busy: these processes | whole machine |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range names {
		for ph := range phases {
			for _, conns := range o.conns {
				srv, redis := r.perJob(n, conns, ph, "beanstalkd"), "–"
				if n == "delayq" {
					srv, redis = r.perJob(n, conns, ph, "delayq"), fmt.Sprintf("%.1f", r.perJob(n, conns, ph, "redis-server"))
				}
				w("| %s | %s | %d | %.1f | %.1f | %s | %.1f | %.2f | %.2f |\n", n, phases[ph].name, conns,
					r.med(n, conns, ph, func(p phase) float64 { return float64(p.wall.Microseconds()) / float64(o.jobs) }),
					srv, redis, r.perJob(n, conns, ph, "client"), r.med(n, conns, ph, busy), r.med(n, conns, ph, func(p phase) float64 { return p.machine }))
			}
		}
	}
	w("\nThe commands delayq sent its redis-server per job, and the microseconds Redis spent executing them per job (`INFO commandstats`, reset before each phase; medians of the runs):\n\n")
	w("| scenario | connections | commands per job | µs per job executing them | commands (calls per job, µs per job) |\n|---|---:|---:|---:|---|\n")
	for ph := range phases {
		for _, conns := range o.conns {
			calls, usec, detail := r.commands(conns, ph)
			w("| %s | %d | %.2f | %.1f | %s |\n", phases[ph].name, conns, calls, usec, detail)
		}
	}
	w("\n%s\n", r.bounds())
	return b.String()
}

func busy(p phase) float64 {
	var t time.Duration
	for _, v := range p.cpu {
		t += v
	}
	return t.Seconds() / p.wall.Seconds()
}

// med returns the median over the runs of f of one phase of one contestant's scenario.
func (r *report) med(name string, conns, ph int, f func(phase) float64) float64 {
	return stats(r.runs(name, conns, func(res result) float64 { return f(phases[ph].of(res)) })).med
}

// perJob returns the median CPU time per job of one process, in µs.
func (r *report) perJob(name string, conns, ph int, proc string) float64 {
	return r.med(name, conns, ph, func(p phase) float64 { return float64(p.cpu[proc].Microseconds()) / float64(r.opts.jobs) })
}

// commands returns delayq's Redis commands per job and the µs Redis spent on them per job, in
// all and by command (those of 0.01 calls per job or more, costliest first).
func (r *report) commands(conns, ph int) (calls, usec float64, detail string) {
	n := float64(r.opts.jobs)
	names := map[string]bool{}
	for _, res := range r.results {
		if res.contestant == "delayq" && res.conns == conns {
			for c := range phases[ph].of(res).cmds {
				names[c] = true
			}
		}
	}
	type row struct {
		name        string
		calls, usec float64
	}
	var rows []row
	for c := range names {
		rows = append(rows, row{c,
			r.med("delayq", conns, ph, func(p phase) float64 { return float64(p.cmds[c].calls) / n }),
			r.med("delayq", conns, ph, func(p phase) float64 { return float64(p.cmds[c].usec) / n })})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.usec, a.usec) })
	var parts []string
	for _, x := range rows {
		if x.calls >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.2f (%.1f)", x.name, x.calls, x.usec))
		}
	}
	calls = r.med("delayq", conns, ph, func(p phase) float64 {
		var t int64
		for _, c := range p.cmds {
			t += c.calls
		}
		return float64(t) / n
	})
	usec = r.med("delayq", conns, ph, func(p phase) float64 {
		var t int64
		for _, c := range p.cmds {
			t += c.usec
		}
		return float64(t) / n
	})
	return calls, usec, strings.Join(parts, ", ")
}

// bounds says, from the measured times, what limits delayq's rate.
func (r *report) bounds() string {
	o := r.opts
	cpus := float64(runtime.NumCPU())
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	many, one := slices.Max(o.conns), slices.Min(o.conns)
	for ph, phs := range phases {
		dq, rs := r.perJob("delayq", many, ph, "delayq"), r.perJob("delayq", many, ph, "redis-server")
		bs := r.perJob("beanstalkd -b", many, ph, "beanstalkd")
		_, usec, _ := r.commands(many, ph)
		machine := r.med("delayq", many, ph, func(p phase) float64 { return p.machine })
		p("**%s, %d connections.** delayq spent %.1f µs of CPU per job in its own process and %.1f µs in redis-server (%.1f µs of which executing commands), %.1f times the %.1f µs beanstalkd spent. ",
			phs.name, many, dq, rs, usec, (dq+rs)/bs, bs)
		if machine >= 0.85*cpus {
			p("The machine's cores were busy (%.2f of %.0f by `/proc/stat`, other programs included), so the rate follows the CPU each job costs", machine, cpus)
		} else {
			p("The machine kept only %.2f of %.0f cores busy, so part of the bound is waiting rather than CPU", machine, cpus)
		}
		if dq > rs {
			p("; delayq's own process (the protocol, the Backend, go-redis) is the larger share of it, %.0f %% of the servers' CPU.\n\n", 100*dq/(dq+rs))
		} else {
			p("; redis-server is the larger share of it, %.0f %% of the servers' CPU.\n\n", 100*rs/(dq+rs))
		}
	}
	for ph, phs := range phases {
		wall := r.med("delayq", one, ph, func(p phase) float64 { return float64(p.wall.Microseconds()) / float64(o.jobs) })
		cpu := r.perJob("delayq", one, ph, "delayq") + r.perJob("delayq", one, ph, "redis-server") + r.perJob("delayq", one, ph, "client")
		calls, _, _ := r.commands(one, ph)
		bw := r.med("beanstalkd -b", one, ph, func(p phase) float64 { return float64(p.wall.Microseconds()) / float64(o.jobs) })
		p("**%s, %d connection.** Each job waits for its reply before the next is sent: %.1f µs per job for delayq against %.1f µs for beanstalkd. A delayq job is %.2f Redis commands, and the client, delayq and redis-server together spent %.1f µs of CPU per job (%.0f %% of the wall time per job): with one connection the rate is bounded by the CPU along each job's path, not by the disk.\n\n",
			phs.name, one, wall, bw, calls, cpu, 100*cpu/wall)
	}
	lo, hi := r.ratios("beanstalkd -b -f 1000")
	dlo, dhi := r.ratios("beanstalkd -b")
	p("Against beanstalkd fsyncing at most once a second (`-f 1000`, as delayq's Redis does its AOF, in a background thread), delayq reaches %.0f–%.0f %% of its rates; against beanstalkd's default (at most every 50 ms), %.0f–%.0f %%.", lo, hi, dlo, dhi)
	return strings.TrimSpace(b.String())
}

// ratios returns the smallest and largest ratio, in percent, of delayq's median rate to the
// other's over the scenarios.
func (r *report) ratios(other string) (float64, float64) {
	var d []float64
	rate := func(p phase) float64 { return p.rate }
	for ph := range phases {
		for _, conns := range r.opts.conns {
			d = append(d, 100*r.med("delayq", conns, ph, rate)/r.med(other, conns, ph, rate))
		}
	}
	return slices.Min(d), slices.Max(d)
}

func num(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func machine() string {
	model := "unknown CPU"
	for _, line := range strings.Split(readTrim("/proc/cpuinfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			break
		}
	}
	mem := ""
	for _, line := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			mem = fmt.Sprintf(", %.1f GiB memory", kb/(1<<20))
		}
	}
	return fmt.Sprintf("%d CPUs, %s%s", runtime.NumCPU(), model, mem)
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return name + " (version unknown)"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if strings.HasPrefix(line, "Redis server v=") {
		v, _, _ := strings.Cut(strings.TrimPrefix(line, "Redis server v="), " ")
		return "redis " + v
	}
	return line
}

func delayqVersion() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "(commit unknown)"
	}
	v := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!BENCHMARKS.md").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		v += " (with uncommitted changes)"
	}
	return v
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

// writeSection puts md between the markers in path, or appends the markers and md at its end.
func writeSection(path, md string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	section := beginMarker + "\n" + md + endMarker + "\n"
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + section + strings.TrimPrefix(s[j+len(endMarker):], "\n")
	case i < 0 && j < 0:
		s = strings.TrimRight(s, "\n") + "\n\n" + section
	default:
		return fmt.Errorf("%s: the markers %s and %s are not both there in order", path, beginMarker, endMarker)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
