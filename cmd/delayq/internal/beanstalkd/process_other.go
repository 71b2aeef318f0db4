//go:build !unix

package beanstalkd

import "runtime"

// rusage is not measured here.
func rusage() (user, sys string) { return "0.000000", "0.000000" }

// uname returns the operating system and architecture Go was built for.
func uname() (sysname, machine string) { return runtime.GOOS, runtime.GOARCH }
