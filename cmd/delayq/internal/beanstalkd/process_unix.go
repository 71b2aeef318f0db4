//go:build unix

package beanstalkd

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// rusage returns the process's user and system CPU time in seconds, as beanstalkd prints them.
func rusage() (user, sys string) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return "0.000000", "0.000000"
	}
	tv := func(t unix.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
	return tv(ru.Utime), tv(ru.Stime)
}

// uname returns the kernel's version string and the machine, which beanstalkd's stats reports
// as os and platform.
func uname() (sysname, machine string) {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "", ""
	}
	return unix.ByteSliceToString(u.Version[:]), unix.ByteSliceToString(u.Machine[:])
}
